// Command porthole-release builds, pushes and checks porthole's release
// image without a Docker engine, with go-containerregistry as a library.
// It is a module of its own, so that the library stays out of porthole's
// module and binary.
//
//	porthole-release image -out DIR -created TIME -version V linux/amd64=BIN linux/arm64=BIN
//	    an OCI image index in an OCI layout at DIR, one image a platform:
//	    FROM scratch, the binary at /porthole, user 65532:65532, created
//	    at TIME (the commit's, so two builds of one commit are one index);
//	    prints the index digest
//	porthole-release push -layout DIR REF
//	    pushes the layout's index to REF (registry/repository:tag) and
//	    prints REF's repository@digest
//	porthole-release digests -layout DIR
//	    prints the index digest, then each platform and its manifest digest
//	porthole-release verify REF
//	    pulls the index REF names and every image in it, reading every
//	    blob, and checks each against its digest (cosign checks the
//	    signatures, and does not read layers)
//	porthole-release registry -addr ADDR -blobs DIR
//	    serves an OCI registry (with the referrers API) on ADDR, blobs kept
//	    in DIR, manifests in memory; prints "registry ADDR" once it listens
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: porthole-release image|push|digests|verify|registry ...")
		os.Exit(2)
	}
	var err error
	switch args := os.Args[2:]; os.Args[1] {
	case "image":
		err = runImage(args)
	case "push":
		err = runPush(args)
	case "digests":
		err = runDigests(args)
	case "verify":
		err = runVerify(args)
	case "registry":
		err = runRegistry(args)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "porthole-release:", err)
		os.Exit(1)
	}
}
