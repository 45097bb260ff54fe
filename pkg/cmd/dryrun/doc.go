// Package dryrun is kubectl's --dry-run for every command that writes, as one component: the flag, the one
// rule that tells a write from a read, the transport layer that holds writes back (client) or sends them
// with dryRun=All (server), the local answers a client dry run gives, and what the command prints at its
// end (the objects it would have written, as one YAML stream on stdout; its own stdout lines as comments).
//
// It sits below every client a command builds (the factory's, a remote one's, a stored kubeconfig's), so
// no write can slip past it, whatever path sent it. The domain knows only member.Cluster.DryRun: it skips
// waits for effects a dry run cannot have, and returns a member.DryRunStop where the next step needs what
// only a real write yields; Finish reports such a stop as the end of a successful dry run.
//
// One job per file:
//
//	strategy.go   the --dry-run flag and its three strategies
//	recorder.go   a command's dry run: its strategy and what it recorded, shared by every cluster it reaches
//	classify.go   what a request's path names, and the one rule of what is a write
//	transport.go  the layer around a cluster's transport: held back, or sent as a server-side dry run
//	answer.go     the local answer to a held-back write, as the server would give it
//	print.go      the objects a run would have written, as YAML (credentials redacted), and stdout as comments
//	finish.go     the end of a command: print, say what the server could not check, and a stop that is success
package dryrun
