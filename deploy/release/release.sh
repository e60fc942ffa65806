#!/bin/sh
# deploy/release/release.sh: what `make release VERSION=x.y.z` runs.
#
# Into dist/$VERSION: a static, stamped binary for each of RELEASE_TARGETS
# (built as `make binary` builds one: -trimpath, no VCS stamp of the
# toolchain's, the version, commit and commit time stamped from git), a
# CycloneDX SBOM of the module graph (cyclonedx-gomod, no serial number or
# timestamp, so it too is the same for the same commit), SHA256SUMS of
# them all, and SHA256SUMS.sig: an SSH signature of SHA256SUMS by
# RELEASE_SIGNING_KEY (namespace porthole-release), which
# deploy/release/allowed_signers verifies (SECURITY.md, Verifying a
# release). The signing key never lives in the repository.
#
# Environment (the Makefile sets all but the key):
#   VERSION               x.y.z
#   MAKE                  make, to build each binary
#   CYCLONEDX             the cyclonedx-gomod binary
#   RELEASE_SIGNING_KEY   an SSH private key (ed25519) that signs SHA256SUMS
#   RELEASE_TARGETS       GOOS/GOARCH pairs (default: linux/amd64 linux/arm64 darwin/arm64)
#   DIST                  where to write (default: dist/$VERSION)
#   ALLOWED_SIGNERS       the signers the signature must verify against
#                         (default: deploy/release/allowed_signers; tests
#                         name their throwaway key's)
set -eu

case "${VERSION:-}" in
[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "release: VERSION must be x.y.z, not '${VERSION:-}'" >&2; exit 2 ;;
esac
if [ -z "${RELEASE_SIGNING_KEY:-}" ] || [ ! -r "$RELEASE_SIGNING_KEY" ]; then
	echo "release: RELEASE_SIGNING_KEY must name the SSH private key that signs SHA256SUMS (it never lives in the repository)" >&2
	exit 2
fi
targets=${RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/arm64}
dist=${DIST:-dist/$VERSION}
signers=${ALLOWED_SIGNERS:-deploy/release/allowed_signers}

# The commit's time, not the build's: for tools that read it; the Go
# toolchain writes no time into a binary.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH

rm -rf "$dist"
mkdir -p "$dist"
for t in $targets; do
	os=${t%/*}
	arch=${t#*/}
	"$MAKE" --no-print-directory binary VERSION="$VERSION" RELEASE_OS="$os" RELEASE_ARCH="$arch" OUT="$dist/porthole-$VERSION-$os-$arch"
done
"$CYCLONEDX" mod -json -licenses -noserial -notimestamp -output "$dist/porthole-$VERSION.cdx.json" .

(
	cd "$dist"
	sha256sum porthole-* >SHA256SUMS
	ssh-keygen -q -Y sign -f "$RELEASE_SIGNING_KEY" -n porthole-release SHA256SUMS
)
# The signature must verify with the key the repository publishes.
ssh-keygen -q -Y verify -f "$signers" -I release@porthole-dev -n porthole-release \
	-s "$dist/SHA256SUMS.sig" <"$dist/SHA256SUMS" >/dev/null || {
	echo "release: RELEASE_SIGNING_KEY is not the key $signers names" >&2
	exit 1
}
echo "release: $dist"
ls -l "$dist"
