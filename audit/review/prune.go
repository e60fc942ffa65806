package review

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/porthole-dev/porthole/audit"
)

// Prune removes, from an archived series that no porthole is writing, the
// oldest files whose every record is older than before, leaving at least
// the newest file; it first appends a signed pruned record to the newest
// file, chained and keyed with key (audit.AppendPruned). It returns the
// files removed. The series must verify first with opts (whose keys
// should hold every key the series was written and signed under: key and
// signer's public key are added), from its genesis or an earlier signed
// pruned record.
func Prune(paths []string, before time.Time, opts VerifyOptions, key []byte, signer ed25519.PrivateKey, now time.Time) ([]string, error) {
	opts.Keys = opts.Keys.With(key, signer.Public().(ed25519.PublicKey))
	v, err := VerifyWith(paths, opts)
	if err != nil {
		return nil, err
	}
	if !v.OK() {
		return nil, fmt.Errorf("the series does not verify, so nothing was pruned: %s", v.Problem)
	}
	return audit.AppendPruned(v.Files, v.Chain, before, key, signer, now)
}
