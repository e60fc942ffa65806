package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// introspect asks the introspection endpoint (RFC 7662) about a token that
// is not a JWT. A positive answer is held for at most introspectionTTL and
// never past the token's exp, so a revoked token stops working within that
// time; a negative one is not held.
//
// vouched says another replica vouched for the token within RecentlyValid.
func (v *Validator) introspect(ctx context.Context, token string, key [sha256.Size]byte, vouched bool) (*Identity, error) {
	in := v.cfg.Introspection
	if in == nil {
		return nil, fmt.Errorf("%w: it is not a JWT, and porthole has no introspection endpoint", ErrInvalidToken)
	}
	now := v.cfg.Now()
	if id := v.intro.get(key, now); id != nil {
		return id, nil
	}
	// A token the endpoint refused is refused again for a while without
	// asking: one bad token sent from many addresses must not become as
	// many calls to the authorization server.
	if v.introRefused.get(key, now) != nil {
		return nil, fmt.Errorf("%w: the introspection endpoint refused it within the last %s", ErrInvalidToken, introspectionRefusedTTL)
	}
	// Security: a bound on the endpoint's calls across all callers, so
	// that distinct opaque tokens from many addresses are not as many
	// calls to the authorization server; part of it is kept for tokens
	// that were valid within RecentlyValid, so that strangers' tokens
	// cannot starve a caller whose held answer ran out.
	recent := vouched || v.introRecent.get(key, now) != nil
	if !(recent && v.introReserved.Allow()) && !v.introLimit.Allow() {
		return nil, ErrIntrospectionBusy
	}
	id, err := v.askIntrospection(ctx, in, token, now)
	if err != nil {
		if errors.Is(err, ErrInvalidToken) {
			v.introRefused.put(key, refusedMarker, now.Add(introspectionRefusedTTL), now)
			v.introRecent.delete(key)
		}
		return nil, err
	}
	v.intro.put(key, id, minTime(now.Add(introspectionTTL), id.Expiry), now)
	v.introRecent.put(key, id, minTime(now.Add(RecentlyValid), id.Expiry), now)
	return id, nil
}

// ErrIntrospectionBusy is Validate's answer for a token it would have to
// introspect past IntrospectionRate: not a refusal of the token (503).
var ErrIntrospectionBusy = errors.New("porthole is asking the introspection endpoint about too many tokens now")

// introspectionRefusedTTL is how long a token the endpoint refused stays
// refused without asking again.
const introspectionRefusedTTL = 10 * time.Second

// refusedMarker stands in the refusal cache for a refused token.
var refusedMarker = &Identity{}

// askIntrospection asks the endpoint and checks its answer.
func (v *Validator) askIntrospection(ctx context.Context, in *Introspection, token string, now time.Time) (*Identity, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, strings.NewReader(url.Values{"token": {token}, "token_type_hint": {"access_token"}}.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(in.ClientSecret))
	resp, err := v.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: the introspection endpoint did not answer: %v", ErrInvalidToken, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: the introspection endpoint answered HTTP %d", ErrInvalidToken, resp.StatusCode)
	}
	var a map[string]any
	if err := decodeBounded(resp.Body, &a); err != nil {
		return nil, fmt.Errorf("%w: introspection: %v", ErrInvalidToken, err)
	}
	k, err := v.checkIntrospected(in, a, now)
	if err != nil {
		return nil, err
	}
	id, err := v.identity(k.Issuer, a)
	if err != nil {
		return nil, err
	}
	if id.Expiry.IsZero() {
		return nil, fmt.Errorf("%w: introspection gives no exp", ErrInvalidToken)
	}
	if !now.Before(id.Expiry.Add(leeway)) {
		return nil, fmt.Errorf("%w: it expired at %s", ErrInvalidToken, id.Expiry.UTC().Format(time.RFC3339))
	}
	return id, nil
}

// checkIntrospected refuses an introspection answer that does not vouch
// for a token porthole may take now, and returns the issuer's keys.
func (v *Validator) checkIntrospected(in *Introspection, a map[string]any, now time.Time) (*issuerKeys, error) {
	if active, _ := a["active"].(bool); !active {
		return nil, fmt.Errorf("%w: the introspection endpoint says it is not active (expired or revoked)", ErrInvalidToken)
	}
	// Security: the answer is the endpoint's issuer's, never another
	// trusted issuer's (one authorization server could vouch for
	// another's principals).
	iss, _ := a["iss"].(string)
	k, ok := v.issuers[iss]
	if !ok || iss != in.Issuer {
		return nil, fmt.Errorf("%w: introspection names iss %q, not %s, the issuer the introspection endpoint answers for", ErrInvalidToken, iss, in.Issuer)
	}
	// RFC 8707: a token for another resource is not porthole's.
	if !audienceHolds(a["aud"], v.cfg.Resource) {
		return nil, fmt.Errorf("%w: introspection says its aud is %v, not %s", ErrInvalidToken, a["aud"], v.cfg.Resource)
	}
	if tt, _ := a["token_type"].(string); tt != "" && !strings.EqualFold(tt, "Bearer") && !strings.EqualFold(tt, "access_token") {
		return nil, fmt.Errorf("%w: introspection says it is a %q token", ErrInvalidToken, tt)
	}
	if nbf, ok := a["nbf"].(float64); ok && now.Add(leeway).Before(time.Unix(int64(nbf), 0)) {
		return nil, fmt.Errorf("%w: introspection says it is not valid before %s", ErrInvalidToken, time.Unix(int64(nbf), 0).UTC().Format(time.RFC3339))
	}
	return k, nil
}

// audienceHolds reports whether an aud claim (a string or an array of
// them) holds resource exactly.
func audienceHolds(aud any, resource string) bool {
	switch a := aud.(type) {
	case string:
		return a == resource
	case []any:
		return slices.ContainsFunc(a, func(x any) bool { s, _ := x.(string); return s == resource })
	}
	return false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
