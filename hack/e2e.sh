#!/usr/bin/env bash
# make e2e: the end-to-end packages on real local clusters.
#
# One e2e process leaves the machine mostly idle (about 40% of 2 cores: a run waits on API servers,
# watches and namespace deletions far more than it computes), so the e2e package's tests are dealt
# round-robin, in the order `go test -list` gives them, to three processes that each start clusters of
# their own (with two, the longer took 18 of make test's 20 minutes on a loaded machine), and the doc test
# and the multi-cluster tests run as a fourth. The node tier (./test/node: a provider
# with a real node, as root on Linux; it fails elsewhere, saying why) runs as a fifth: it waits on pods and
# packets far more than it computes too. Each process's lines are prefixed with
# its name as they come; the run fails if any of them fails. Given -run (one test by name), everything
# runs in a single process instead. test/clusterprofile is a module of its own (it requires
# sigs.k8s.io/cluster-inventory-api, which the product must not): it runs after the doc test, in the
# fourth process.
#
# Usage: hack/e2e.sh [go test flags]   (make e2e passes TEST_FLAGS). Environment: GO (the go command),
# and what the tests read (FEDERATE_BIN, DOCTEST_SUMMARY).
set -uo pipefail
GO=${GO:-go}
flags=("$@")
base=(-count=1 -timeout 20m -tags e2e) # the end-to-end packages build only with the e2e tag

# With -run, only the packages holding a test the pattern names run: each starts clusters (the node tier a
# node) in its TestMain, whatever its tests, so a package with none to run is not started at all.
pattern=
for i in "${!flags[@]}"; do
	case ${flags[i]} in
	-run) pattern=${flags[i + 1]:-} ;;
	-run=*) pattern=${flags[i]#-run=} ;;
	esac
done
if [ -n "$pattern" ]; then
	status=0 ran=0
	for pkg in ./test/e2e ./test/docs ./test/multi ./test/node; do
		if grep -q '^Test' <<<"$("$GO" test -tags e2e -list "$pattern" "$pkg")"; then
			ran=1
			"$GO" test "${base[@]}" "${flags[@]}" "$pkg" || status=1
		fi
	done
	if grep -q '^Test' <<<"$(cd test/clusterprofile && "$GO" test -tags e2e -list "$pattern" ./...)"; then
		ran=1
		(cd test/clusterprofile && "$GO" test "${base[@]}" "${flags[@]}" ./...) || status=1
	fi
	if [ "$ran" = 0 ]; then
		echo "e2e: no end-to-end test matches -run $pattern" >&2
		exit 1
	fi
	exit $status
fi

mapfile -t tests < <("$GO" test -tags e2e -list . ./test/e2e | grep '^Test')
if [ "${#tests[@]}" -eq 0 ]; then
	echo "e2e: go test -list found no tests in ./test/e2e" >&2
	exit 1
fi
shards=3
shard() { # the tests at positions $1, $1+shards, ... as one -run pattern
	local out=() i
	for ((i = $1; i < ${#tests[@]}; i += shards)); do out+=("${tests[i]}"); done
	local IFS='|'
	echo "^(${out[*]})\$"
}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # run NAME ARGS...: go test ARGS, its lines prefixed with NAME, its exit code in $dir/NAME
	local name=$1
	shift
	{
		"$GO" test "${base[@]}" "${flags[@]}" "$@" 2>&1
		echo $? >"$dir/$name"
	} | sed -u "s/^/[$name] /"
}
run e2e-1 -run "$(shard 0)" ./test/e2e &
run e2e-2 -run "$(shard 1)" ./test/e2e &
run e2e-3 -run "$(shard 2)" ./test/e2e &
{
	run docs+multi -p 1 ./test/docs ./test/multi
	(cd test/clusterprofile && run clusterprofile -p 1 ./...)
} &
run node ./test/node &
wait

status=0
for name in e2e-1 e2e-2 e2e-3 docs+multi clusterprofile node; do
	rc=$(cat "$dir/$name" 2>/dev/null || echo 1)
	echo "$name: exit $rc"
	[ "$rc" = 0 ] || status=1
done
exit $status
