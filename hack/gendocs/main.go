// Command gendocs writes the command reference into docs/reference.
package main

import (
	"fmt"
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/docgen"
)

func main() {
	dir := "docs/reference"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	root := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	if err := docgen.Write(root, dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
