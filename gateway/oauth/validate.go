package oauth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// ErrInvalidToken wraps every refusal of a token: the client gets 401.
var ErrInvalidToken = errors.New("the access token is not valid for porthole")

// Identity is who a valid token says is calling.
type Identity struct {
	// Principal is "oauth:<issuer alias>:<claim value>".
	Principal string
	Issuer    string // the issuer's URL
	Subject   string // sub
	ClientID  string // azp, or client_id
	TokenID   string // jti
	Scopes    []string
	// Claims are the token's claims whose values are strings or arrays of
	// strings, for grants by claim (a token is at most MaxTokenBytes).
	Claims map[string][]string
	// Expiry is the token's exp; IssuedAt its iat, if it has one.
	Expiry, IssuedAt time.Time
	// keys, kid, alg and pub are the issuer's keys and the key a JWT was
	// verified with: an identity is held only while that key is.
	keys     *issuerKeys
	kid, alg string
	pub      crypto.PublicKey
}

// HasScope reports whether the token was granted scope.
func (id *Identity) HasScope(scope string) bool { return slices.Contains(id.Scopes, scope) }

// principalValue is the rule a claim value must fit to name a principal:
// the tokens file's rule for names.
var principalValue = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Validator validates access tokens. It is safe for concurrent use.
type Validator struct {
	cfg     Config
	issuers map[string]*issuerKeys // by URL
	opts    []jwt.ParserOption
	valid   tokenCache // validated JWTs, until their exp
	intro   tokenCache // positive introspection answers, for at most 30 s
	// introRefused holds tokens the introspection endpoint refused, for
	// introspectionRefusedTTL.
	introRefused tokenCache
	// introLimit bounds the calls to the introspection endpoint for
	// tokens not recently valid; introReserved, the calls for those that
	// are, which may also take from introLimit.
	introLimit, introReserved *rate.Limiter
	// introRecent holds the tokens the endpoint vouched for, for
	// RecentlyValid; only a valid token enters it.
	introRecent tokenCache
}

// New checks the configuration and returns a Validator. It fetches
// nothing: call Refresh (porthole does at start, and when it may) for the
// issuers' keys; until they are had, the issuers' tokens are refused.
func New(cfg Config) (*Validator, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	v := &Validator{cfg: cfg, issuers: map[string]*issuerKeys{}, introLimit: rate.NewLimiter(IntrospectionRate-IntrospectionReservedRate, IntrospectionBurst-IntrospectionReservedBurst),
		introReserved: rate.NewLimiter(IntrospectionReservedRate, IntrospectionReservedBurst)}
	for _, is := range cfg.Issuers {
		v.issuers[is.URL] = &issuerKeys{Issuer: is, minRSABits: cfg.MinRSABits, problem: fmt.Sprintf("the OAuth issuer %s has not been reached yet", is.URL)}
	}
	algs := make([]string, 0, len(allowedAlgs))
	for a := range allowedAlgs {
		algs = append(algs, a)
	}
	v.opts = []jwt.ParserOption{jwt.WithValidMethods(algs), jwt.WithAudience(cfg.Resource), jwt.WithLeeway(leeway),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithStrictDecoding(), jwt.WithTimeFunc(cfg.Now)}
	return v, nil
}

// Refresh fetches every issuer's keys, each on a context of its own and
// all at once, and returns when they are done (or ctx is). porthole calls
// it at start and every minute: an issuer down at start is taken up once
// it answers, and a key an issuer withdraws stops being trusted within a
// minute.
func (v *Validator) Refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for _, k := range v.issuers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.refresh(v.cfg.Client, v.cfg.Now())
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Problem says why some issuer's tokens are refused now, or "".
func (v *Validator) Problem() string {
	var ps []string
	for _, k := range v.issuers {
		if p := k.problemNow(); p != "" {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return strings.Join(ps, "; ")
}

// Validate checks a token and says who it names. It may fetch an issuer's
// keys (for an unknown kid) or ask the introspection endpoint.
func (v *Validator) Validate(ctx context.Context, token string) (*Identity, error) {
	return v.validate(ctx, token, online)
}

// ValidateVouched is Validate for a token another replica's introspection
// vouched for within RecentlyValid (the front asks the shared limits):
// asked about, if it must be, within the budget kept for tokens that were
// valid, as a token this process vouched for is.
func (v *Validator) ValidateVouched(ctx context.Context, token string) (*Identity, error) {
	return v.validate(ctx, token, vouched)
}

// Digest is the hex SHA-256 of token: what the replicas share of a token
// that was vouched for, never the token.
func Digest(token string) string {
	k := tokenKey(token)
	return hex.EncodeToString(k[:])
}

// how says what validate may do to decide on a token: only read what is
// held, or also ask the network, for a stranger's token or within the
// budget kept for one vouched for.
type how int

const (
	held how = iota
	online
	vouched
)

// ErrNeedsFetch is ValidateHeld's answer for a token it cannot decide
// without the network: an opaque token, or a JWT of a kid not held.
var ErrNeedsFetch = errors.New("deciding on the token needs the network")

var errNeedsFetch = ErrNeedsFetch

// WasRecentlyValid reports whether the introspection endpoint vouched for
// token within RecentlyValid. Such a token is no guess: the front lets it
// past the failed-authentication block and the per-address quota, and
// introspection asks about it within the reserved budget.
func (v *Validator) WasRecentlyValid(token string) bool {
	return len(token) <= MaxTokenBytes && v.introRecent.get(tokenKey(token), v.cfg.Now()) != nil
}

// ValidateHeld is Validate without the network: a token whose identity is
// held, or a JWT of a key held. The front asks it before the failed-auth
// block, so that strangers failing from an address a valid caller shares
// do not lock that caller out, while nothing they send costs a fetch.
func (v *Validator) ValidateHeld(token string) (*Identity, error) {
	return v.validate(context.Background(), token, held)
}

func (v *Validator) validate(ctx context.Context, token string, h how) (*Identity, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: it is longer than %d bytes", ErrInvalidToken, MaxTokenBytes)
	}
	id, err := v.decide(ctx, token, h)
	if err != nil {
		return nil, err
	}
	if v.cfg.Withdrawals != nil {
		if err := v.cfg.Withdrawals.check(id); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// decide finds who token names: held, introspected or verified.
func (v *Validator) decide(ctx context.Context, token string, h how) (*Identity, error) {
	key := tokenKey(token)
	now := v.cfg.Now()
	if id := v.valid.get(key, now); id != nil {
		// Held only while its issuer still publishes the key it was
		// verified with, the same key under the same kid: a key the
		// issuer withdrew takes its tokens along.
		if pub, ok := id.keys.key(id.kid, id.alg, now); ok && sameKey(pub, id.pub) {
			return id, nil
		}
		v.valid.delete(key)
	}
	if strings.Count(token, ".") != 2 {
		if id := v.intro.get(key, now); id != nil {
			return id, nil
		}
		if h == held {
			return nil, errNeedsFetch
		}
		return v.introspect(ctx, token, key, h == vouched)
	}
	id, err := v.validateJWT(token, h == held)
	if err != nil {
		return nil, err
	}
	v.valid.put(key, id, id.Expiry, now)
	return id, nil
}

// header is what porthole reads of a JWT's header before it verifies it.
type header struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Typ  string          `json:"typ"`
	Jku  string          `json:"jku"`
	X5u  string          `json:"x5u"`
	X5c  json.RawMessage `json:"x5c"`
	JWK  json.RawMessage `json:"jwk"`
	Crit json.RawMessage `json:"crit"`
}

// check refuses a header porthole will not verify a token under.
func (h header) check() error {
	// Security: a token that says where its key is must not be believed,
	// so it is not looked at (CVE-class: jku/x5u/jwk header injection).
	if h.Jku != "" || h.X5u != "" || len(h.X5c) > 0 || len(h.JWK) > 0 {
		return fmt.Errorf("%w: its header names a key of its own (jku, x5u, x5c or jwk)", ErrInvalidToken)
	}
	// RFC 7515 §4.1.11: a header extension porthole does not know, that the
	// token says must be understood, refuses the token.
	if len(h.Crit) > 0 {
		return fmt.Errorf("%w: its header has crit extensions porthole does not understand", ErrInvalidToken)
	}
	if allowedAlgs[h.Alg] == "" {
		return fmt.Errorf("%w: alg %q is not RS256, ES256 or EdDSA", ErrInvalidToken, h.Alg)
	}
	switch strings.ToLower(h.Typ) {
	case "", "at+jwt", "application/at+jwt", "jwt":
		return nil
	}
	return fmt.Errorf("%w: typ %q is not an access token's", ErrInvalidToken, h.Typ)
}

// validateJWT verifies a JWT access token against its issuer's keys.
func (v *Validator) validateJWT(token string, offline bool) (*Identity, error) {
	h, iss, err := peek(token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	k, ok := v.issuers[iss]
	if !ok {
		return nil, fmt.Errorf("%w: iss %q is not an issuer porthole trusts", ErrInvalidToken, iss)
	}
	pub, ok := k.key(h.Kid, h.Alg, v.cfg.Now())
	if !ok {
		if offline {
			return nil, errNeedsFetch
		}
		// An unknown kid: the issuer may have rotated its keys. Fetched
		// again at most once a minute, whatever kids tokens make up.
		k.refreshForUnknownKid(v.cfg.Client, v.cfg.Now())
		if pub, ok = k.key(h.Kid, h.Alg, v.cfg.Now()); !ok {
			if p := k.problemNow(); p != "" {
				return nil, fmt.Errorf("%w: %s", ErrInvalidToken, p)
			}
			return nil, fmt.Errorf("%w: no key of %s has kid %q for %s", ErrInvalidToken, iss, h.Kid, h.Alg)
		}
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return pub, nil }, slices.Concat(v.opts, []jwt.ParserOption{jwt.WithIssuer(iss)})...); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	id, err := v.identity(k.Issuer, claims)
	if err != nil {
		return nil, err
	}
	id.keys, id.kid, id.alg, id.pub = k, h.Kid, h.Alg, pub
	return id, nil
}

// sameKey reports whether two public keys are one (RSA, ECDSA and Ed25519
// keys all have Equal).
func sameKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// senderBound reports whether claims bind the token to a key its sender
// must prove (RFC 9449 DPoP, RFC 8705 mTLS): porthole checks neither, so
// such a token is not a bearer token it may accept.
func senderBound(c map[string]any) bool {
	_, ok := c["cnf"]
	return ok
}

// peek reads a JWT's header and iss without verifying anything.
func peek(token string) (header, string, error) {
	var h header
	parts := strings.Split(token, ".")
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &h) != nil {
		return h, "", errors.New("its header is not base64url JSON")
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	var p struct {
		Iss string `json:"iss"`
	}
	if err != nil || json.Unmarshal(pb, &p) != nil {
		return h, "", errors.New("its payload is not base64url JSON")
	}
	return h, p.Iss, nil
}

// identity reads who the claims name.
func (v *Validator) identity(is Issuer, c map[string]any) (*Identity, error) {
	str := func(name string) string { s, _ := c[name].(string); return s }
	id := &Identity{Issuer: is.URL, Subject: str("sub"), ClientID: str("azp"), TokenID: str("jti")}
	if id.ClientID == "" {
		id.ClientID = str("client_id")
	}
	if senderBound(c) {
		return nil, fmt.Errorf("%w: it is bound to a key of its sender (cnf), which porthole does not check", ErrInvalidToken)
	}
	// A token of a client acting for itself (client credentials) may leave
	// sub out where introspection answers for it: its subject is its
	// client, and its principal names it as a client, apart from any
	// person of the same name (oauth:<alias>:client:<id>).
	segment, value := "", str(v.cfg.PrincipalClaim)
	if id.Subject == "" {
		id.Subject, segment = id.ClientID, "client:"
		if v.cfg.PrincipalClaim == "sub" {
			value = id.ClientID
		}
	}
	if id.Subject == "" {
		return nil, fmt.Errorf("%w: it has no sub and no client id", ErrInvalidToken)
	}
	if v.cfg.PrincipalClaim == "email" && c["email_verified"] != true {
		return nil, fmt.Errorf("%w: its email is not verified (email_verified)", ErrInvalidToken)
	}
	if !principalValue.MatchString(value) {
		return nil, fmt.Errorf("%w: its %s claim %q does not fit a principal name (letters, digits, '.', '_', '@' or '-', at most 64): choose another claim with PORTHOLE_OAUTH_PRINCIPAL_CLAIM", ErrInvalidToken, v.cfg.PrincipalClaim, value)
	}
	id.Principal = "oauth:" + is.Alias + ":" + segment + value
	id.Scopes, id.Claims = scopes(c), stringClaims(c)
	id.Expiry, id.IssuedAt = unixClaim(c["exp"]), unixClaim(c["iat"])
	return id, nil
}

// scopes are the token's scopes: scope, a space-separated string, or else
// scp, an array (Okta) or a space-separated string (Microsoft Entra).
func scopes(c map[string]any) []string {
	if s, ok := c["scope"].(string); ok {
		return strings.Fields(s)
	}
	switch scp := c["scp"].(type) {
	case string:
		return strings.Fields(scp)
	case []any:
		var out []string
		for _, x := range scp {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// stringClaims are the claims whose values are strings, or arrays holding
// strings (the strings only), for grants by claim.
func stringClaims(c map[string]any) map[string][]string {
	out := map[string][]string{}
	for name, x := range c {
		switch x := x.(type) {
		case string:
			out[name] = []string{x}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					out[name] = append(out[name], s)
				}
			}
		}
	}
	return out
}

// unixClaim reads a NumericDate claim; the zero time if it is none.
func unixClaim(x any) time.Time {
	switch x := x.(type) {
	case float64:
		return time.Unix(int64(x), 0)
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return time.Unix(n, 0)
		}
	}
	return time.Time{}
}

// tokenKey is what the caches hold a token by: its digest, never itself.
func tokenKey(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// tokenCache holds identities by token digest until a time, at most
// maxCached of them: a full cache drops its entries past their time and,
// if still full, one entry.
type tokenCache struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]cached
}

type cached struct {
	id    *Identity
	until time.Time
}

func (c *tokenCache) get(k [sha256.Size]byte, now time.Time) *Identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.until) {
		return nil
	}
	return e.id
}

func (c *tokenCache) put(k [sha256.Size]byte, id *Identity, until, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[sha256.Size]byte]cached{}
	}
	if len(c.m) >= maxCached {
		for key, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, key)
			}
		}
		for key := range c.m {
			if len(c.m) < maxCached {
				break
			}
			delete(c.m, key)
		}
	}
	c.m[k] = cached{id: id, until: until}
}

func (c *tokenCache) delete(k [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}
