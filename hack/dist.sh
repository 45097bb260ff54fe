#!/usr/bin/env bash
# Cross-builds release archives into dist/: linux, darwin and windows for amd64 and arm64, CGO off, stripped,
# version stamped; then checksums.txt and the krew manifest rendered from those archives.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:?} ldflags=${LDFLAGS:?}
rm -rf dist && mkdir -p dist/stage
for os in linux darwin windows; do
  for arch in amd64 arm64; do
    bin=kubectl-federate; [ "$os" = windows ] && bin=kubectl-federate.exe
    stage=dist/stage/${os}_${arch}
    mkdir -p "$stage"
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$stage/$bin" ./cmd/kubectl-federate
    cp LICENSE "$stage/"
    tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "dist/kubectl-federate_${version}_${os}_${arch}.tar.gz" "$bin" LICENSE
    echo "dist: kubectl-federate_${version}_${os}_${arch}.tar.gz" >&2
  done
done
rm -rf dist/stage
(cd dist && sha256sum ./*.tar.gz | sed 's# \./# #' > checksums.txt)
go run ./hack/krewgen -template krew-manifest.yaml -dist dist -version "$version"
echo "dist: checksums.txt and krew-manifest.yaml (validated)" >&2
