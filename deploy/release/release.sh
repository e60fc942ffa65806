#!/bin/sh
# deploy/release/release.sh: what `make release VERSION=x.y.z` runs.
#
# Into dist/$VERSION: a static, stamped binary for each of RELEASE_TARGETS
# (built as `make binary` builds one: -trimpath, no VCS stamp of the
# toolchain's, the version, commit and commit time stamped from git), a
# CycloneDX SBOM of each binary (cyclonedx-gomod's bin mode, which reads
# the build info the binary carries: the modules linked into it, its Go,
# GOOS and GOARCH, and its hashes, with the release's version as the main
# component's; no serial number or timestamp, so it too is the same for the
# same commit), SHA256SUMS of them all, and SHA256SUMS.sig: an SSH signature of SHA256SUMS by
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
#   RELEASE_TOOL          porthole-release (cmd/porthole-release), which
#                         builds the image: an OCI image index of the
#                         linux targets' binaries, FROM scratch, written as
#                         an OCI layout to image/, its digests to IMAGE
#   HELM                  helm, to package the chart with the image's
#                         digest in its values (porthole-<chart>.tgz)
#   RELEASE_IMAGE         where to push the image (ghcr.io/porthole-dev/porthole);
#                         unset: the image is built, not pushed or signed
#   COSIGN                cosign v2.6.5, which signs the pushed index
#                         (recursively: each platform's manifest too) and
#                         attests each linux binary's SBOM to it
#   RELEASE_COSIGN_KEY    cosign's private key (its password in
#                         COSIGN_PASSWORD)
#   RELEASE_COSIGN_PUB    the public key it must be, which the signatures
#                         are verified with before the release is made
#                         (default: deploy/release/cosign.pub; tests name
#                         their throwaway key's)
#   COSIGN_TLOG           true also uploads the signatures to Rekor and
#                         verifies them there (needs the network; not
#                         tested here); otherwise nothing leaves for a log
set -eu

if ! printf '%s' "${VERSION:-}" | grep -Eqx '[0-9]+\.[0-9]+\.[0-9]+'; then
	echo "release: VERSION must be x.y.z, not '${VERSION:-}'" >&2
	exit 2
fi
if [ -z "${RELEASE_SIGNING_KEY:-}" ] || [ ! -r "$RELEASE_SIGNING_KEY" ]; then
	echo "release: RELEASE_SIGNING_KEY must name the SSH private key that signs SHA256SUMS (it never lives in the repository)" >&2
	exit 2
fi
# The Go every build runs (the Makefile's GO_TOOLCHAIN).
export GOTOOLCHAIN=go1.26.11
targets=${RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/arm64}
dist=${DIST:-dist/$VERSION}
signers=${ALLOWED_SIGNERS:-deploy/release/allowed_signers}

# The key must be the one the allowed signers name, before anything is
# built: a release signed by another key is no release (found by review:
# it was found out only after the build, and the output left behind).
key=$(ssh-keygen -y -f "$RELEASE_SIGNING_KEY" | cut -d' ' -f1,2)
if ! grep -qF "$key" "$signers"; then
	echo "release: RELEASE_SIGNING_KEY is not the key $signers names" >&2
	exit 2
fi

# With RELEASE_IMAGE, everything publishing needs, before anything is
# built: a linux target for the image, the tools, and a cosign key that is
# the one RELEASE_COSIGN_PUB names.
if [ -n "${RELEASE_IMAGE:-}" ]; then
	case " $targets " in *" linux/"*) ;; *)
		echo "release: RELEASE_IMAGE needs a linux target in RELEASE_TARGETS" >&2
		exit 2
		;;
	esac
	for v in RELEASE_TOOL COSIGN RELEASE_COSIGN_KEY; do
		eval "[ -n \"\${$v:-}\" ]" || { echo "release: RELEASE_IMAGE needs $v" >&2; exit 2; }
	done
	cosign_pub=${RELEASE_COSIGN_PUB:-deploy/release/cosign.pub}
	if [ ! -r "$cosign_pub" ] || [ "$("$COSIGN" public-key --key "$RELEASE_COSIGN_KEY" 2>/dev/null)" != "$(cat "$cosign_pub")" ]; then
		echo "release: RELEASE_COSIGN_KEY is not the key $cosign_pub holds (or it cannot be read with COSIGN_PASSWORD)" >&2
		exit 2
	fi
fi

# The commit's time, not the build's: for tools that read it; the Go
# toolchain writes no time into a binary.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export SOURCE_DATE_EPOCH

# Built beside dist and moved into place whole: a failed release leaves
# nothing that looks like one.
work=$(mktemp -d "$(dirname "$dist")/.release-XXXXXX" 2>/dev/null || { mkdir -p "$(dirname "$dist")" && mktemp -d "$(dirname "$dist")/.release-XXXXXX"; })
trap 'rm -rf "$work"' EXIT
files=""
for t in $targets; do
	os=${t%/*}
	arch=${t#*/}
	bin="porthole-$VERSION-$os-$arch"
	"$MAKE" --no-print-directory binary VERSION="$VERSION" RELEASE_OS="$os" RELEASE_ARCH="$arch" OUT="$work/$bin"
	# Licenses are read from the module cache the build just filled
	# (GOPROXY=off: nothing is fetched); porthole's own, which no proxy
	# serves, is its LICENSE, Apache-2.0, and the SBOM leaves it out.
	GOPROXY=off "$CYCLONEDX" bin -json -licenses -std -noserial -notimestamp -version "v$VERSION" \
		-output "$work/$bin.cdx.json" "$work/$bin" 2>"$work/.cyclonedx.log" || {
		cat "$work/.cyclonedx.log" >&2
		exit 1
	}
	files="$files $bin $bin.cdx.json"
done
rm -f "$work/.cyclonedx.log"

# image builds the OCI image index of the linux binaries into image/, and
# writes its digests to IMAGE: "index sha256:...", then one line a
# platform. Two builds of one commit are one index: every time in it is
# the commit's.
image() {
	linux=""
	for t in $targets; do
		case $t in linux/*) linux="$linux $t=$work/porthole-$VERSION-${t%/*}-${t#*/}" ;; esac
	done
	[ -n "$linux" ] || return 0
	# shellcheck disable=SC2086 # the pairs hold no blanks
	"$RELEASE_TOOL" image -out "$work/image" -created "$(git log -1 --format=%cI)" -version "$VERSION" \
		-revision "$(git rev-parse HEAD)" $linux >/dev/null
	"$RELEASE_TOOL" digests -layout "$work/image" >"$work/IMAGE"
	files="$files IMAGE"
}

# chart packages deploy/helm/porthole with the image's repository and
# index digest in its values, and the release's version as its
# appVersion, so the chart runs what was signed.
chart() {
	[ -n "${HELM:-}" ] && [ -s "$work/IMAGE" ] || return 0
	digest=$(awk '$1 == "index" {print $2}' "$work/IMAGE")
	if ! printf '%s' "$digest" | grep -Eqx 'sha256:[0-9a-f]{64}'; then
		echo "release: IMAGE names no index digest" >&2
		exit 1
	fi
	src="$work/.chart/porthole"
	mkdir -p "$(dirname "$src")"
	cp -R deploy/helm/porthole "$src"
	# The first "  repository:" and "  digest:" lines are image's.
	awk -v repo="${RELEASE_IMAGE:-ghcr.io/porthole-dev/porthole}" -v digest="$digest" '
		!r && /^  repository: / { print "  repository: " repo; r = 1; next }
		!d && /^  digest: / { print "  digest: \"" digest "\""; d = 1; next }
		{ print }' deploy/helm/porthole/values.yaml >"$src/values.yaml"
	grep -qx "  digest: \"$digest\"" "$src/values.yaml" || {
		echo "release: the chart's values have no image.digest line to set" >&2
		exit 1
	}
	HELM_CACHE_HOME="$work/.chart" HELM_CONFIG_HOME="$work/.chart" HELM_DATA_HOME="$work/.chart" \
		"$HELM" package "$src" --app-version "$VERSION" --destination "$work" >/dev/null
	rm -rf "$work/.chart"
	files="$files $(cd "$work" && ls porthole-*.tgz)"
}

# cosign_run runs cosign, its output kept to be shown if it fails.
cosign_run() {
	"$COSIGN" "$@" >/dev/null 2>"$work/.cosign.log" || {
		cat "$work/.cosign.log" >&2
		echo "release: cosign $1 failed" >&2
		exit 1
	}
}

# publish pushes the image to RELEASE_IMAGE, tagged VERSION, signs it with
# cosign, attests each linux binary's SBOM to it, and verifies the
# signatures of the index and of each platform's manifest, the
# attestations, and every blob against its digest.
publish() {
	[ -n "${RELEASE_IMAGE:-}" ] || return 0
	tlog="--tlog-upload=false"
	if [ "${COSIGN_TLOG:-}" = true ]; then tlog="--tlog-upload=true"; fi
	ref=$("$RELEASE_TOOL" push -layout "$dist/image" "$RELEASE_IMAGE:$VERSION")
	cosign_run sign --key "$RELEASE_COSIGN_KEY" "$tlog" --yes --recursive "$ref"
	for t in $targets; do
		case $t in linux/*) ;; *) continue ;; esac
		cosign_run attest --key "$RELEASE_COSIGN_KEY" "$tlog" --yes --type cyclonedx \
			--predicate "$dist/porthole-$VERSION-${t%/*}-${t#*/}.cdx.json" "$ref"
	done
	# Offline, the key is what is trusted: no log entry is looked for,
	# and the trusted root needs no fetch.
	set -- --key "$cosign_pub"
	if [ "${COSIGN_TLOG:-}" != true ]; then
		root="$work/trusted_root.json"
		printf '%s\n' '{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}' >"$root"
		set -- "$@" --insecure-ignore-tlog --trusted-root "$root"
	fi
	cosign_run verify "$@" "$ref"
	awk '$1 != "index" {print $2}' "$dist/IMAGE" | while read -r platform; do
		cosign_run verify "$@" "${RELEASE_IMAGE}@$platform"
	done
	cosign_run verify-attestation "$@" --type cyclonedx "$ref"
	"$RELEASE_TOOL" verify "$ref" >/dev/null
	rm -f "$work/.cosign.log"
	echo "release: pushed, signed and attested $ref"
}

if [ -n "${RELEASE_TOOL:-}" ]; then
	image
	chart
fi

(
	cd "$work"
	for f in $files; do
		if [ ! -s "$f" ]; then
			echo "release: $f was not made" >&2
			exit 1
		fi
	done
	# shellcheck disable=SC2086 # the names hold no blanks
	sha256sum $files >SHA256SUMS
	ssh-keygen -q -Y sign -f "$RELEASE_SIGNING_KEY" -n porthole-release SHA256SUMS
)
# The signature must verify with the key the repository publishes.
ssh-keygen -q -Y verify -f "$signers" -I release@porthole-dev -n porthole-release \
	-s "$work/SHA256SUMS.sig" <"$work/SHA256SUMS" >/dev/null || {
	echo "release: the signature does not verify against $signers" >&2
	exit 1
}
rm -rf "$dist"
mv "$work" "$dist"
trap - EXIT
# Published once the release is signed and in place: a push that fails
# leaves the release as it is, to publish again.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
publish
echo "release: $dist"
ls -l "$dist"
