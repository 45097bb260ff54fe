//go:build tools

// Package tools pins golangci-lint, built from the Go module proxy by `make lint`.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
