module github.com/federate-dev/kubectl-federate/hack/tools/lint

go 1.26
