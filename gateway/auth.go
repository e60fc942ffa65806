package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/zap"

	"github.com/porthole-dev/porthole/audit"
	"github.com/porthole-dev/porthole/gateway/limit"
	"github.com/porthole-dev/porthole/gateway/oauth"
	"github.com/porthole-dev/porthole/gateway/tokens"
)

// unauthorizedBody is the whole body of every 401: it says nothing about
// whether a token was missing, malformed, unknown or expired.
const unauthorizedBody = "authentication required\n"

type principalKey struct{}

// requireBearer admits a request only with exactly one Authorization header
// of the exact form "Bearer <token>" whose token is in the current set and
// has not expired. It then hands the request to the go-sdk's
// auth.RequireBearerToken with a verifier that reads the principal found
// here, so tool handlers learn their caller the go-sdk's way
// (TokenInfo.UserID) and there is no second path.
//
// The go-sdk's middleware alone would accept any case of "bearer" and any
// whitespace between scheme and token, write the verifier's error text into
// the body, and never send error="invalid_token"; so porthole decides here
// and shapes its own refusals.
//
// With OAuth, a token that is no static token is validated as an access
// token of a trusted issuer (gateway/oauth): its principal is
// oauth:<issuer alias>:<claim value>, and a token without a scope every
// call needs gets 403 insufficient_scope. Every 401 then says where the
// protected resource metadata is (RFC 9728), so an MCP client can find the
// authorization server.
func (g *Server) requireBearer(current func() *tokens.Set, failures limit.Limiter, oa *OAuthOptions, v6Prefix int) func(http.Handler) http.Handler {
	// The introspection quota per client address, in front of the
	// validator's bound across all callers: one address (an IPv6 /64) cannot
	// take more than its share of the calls to the authorization server.
	quota := limit.NewFailures(10000, introspectionPerAddressBurst, introspectionPerAddressEvery)
	verifier := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		name, ok := r.Context().Value(principalKey{}).(string)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		info := &auth.TokenInfo{UserID: name}
		if id, ok := r.Context().Value(identityKey{}).(*oauth.Identity); ok {
			// The expiry is not handed on: porthole has decided it, with
			// the validator's leeway, and the go-sdk's middleware would
			// refuse a token within that leeway again, with a 401 of its
			// own that is neither challenged nor audited.
			info.Scopes, info.Extra = id.Scopes, map[string]any{"oauth": id}
		}
		return info, nil
	}
	sdk := auth.RequireBearerToken(verifier, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return func(next http.Handler) http.Handler {
		return &bearerAuth{g: g, current: current, failures: failures, oa: oa, v6Prefix: v6Prefix, quota: quota, next: sdk(next)}
	}
}

// bearerAuth is requireBearer's middleware: a static token is tried
// first, then an OAuth token, and a request with neither is refused.
type bearerAuth struct {
	g        *Server
	current  func() *tokens.Set
	failures limit.Limiter
	oa       *OAuthOptions
	v6Prefix int
	quota    *limit.Failures
	next     http.Handler
}

func (b *bearerAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	span := b.g.link(r.Context(), "porthole authenticate")
	defer span.End()
	inner := passed(span, b.next)
	token, sent := tokens.Bearer(r.Header)
	if !sent {
		// Security: a request with no bearer token in the form porthole
		// accepts guesses nothing, so it is never counted as a failure
		// nor blocked for others' failures: it always gets the 401 whose
		// challenge names the protected resource metadata (RFC 9728), and
		// costs no lookup. Every MCP connector starts with such a
		// request, and hosted ones share a few egress addresses; were
		// these counted, ten first contacts would turn the next
		// connector's challenge into a 429 it cannot begin OAuth
		// discovery from. The denial budget per address still bounds
		// their records.
		b.g.metrics.authFailed("no-token")
		b.g.denied(r, audit.OutcomeUnauthenticated, http.StatusUnauthorized, "no bearer token in the form porthole accepts")
		unauthorized(w, false, b.oa)
		return
	}
	// A static token is looked up first: a map lookup of its digest costs
	// no more than the block check. Security: a valid token is admitted
	// whatever the failures from its address, so that strangers sharing
	// an address with an agent (every client behind an ingress without
	// trusted proxies) cannot lock it out by failing; only failures are
	// counted and limited.
	name, refused := b.current().Lookup(token, time.Now())
	if refused == nil {
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, name)))
		return
	}
	b.tryOAuth(w, r, inner, token, refused)
}

// tryOAuth decides on a token that is no valid static token (refused says
// why): as an OAuth access token, where porthole takes them, or else
// refused.
func (b *bearerAuth) tryOAuth(w http.ResponseWriter, r *http.Request, inner http.Handler, token string, refused error) {
	// An OAuth token porthole can decide on without the network (its
	// identity held, or a JWT of a key held) is decided before the block
	// too, for the same reason; one that needs a fetch or introspection
	// waits until after it. Security: a static token (ph_), expired or
	// unknown, is never offered to OAuth: it is a porthole secret, and
	// introspection would send it to the authorization server.
	offer := b.oa != nil && !errors.Is(refused, tokens.ErrExpiredToken) && !strings.HasPrefix(token, tokens.Prefix)
	var held error
	if offer {
		id, err := b.oa.Validator.ValidateHeld(token)
		if b.decided(w, r, inner, id, err) {
			return
		}
		held = err
	}
	// The per-address limits count an IPv6 address as its network
	// (limit.AddrKey): a /64 holds more addresses than any limit.
	addr := limit.AddrKey(requestInfoFrom(r.Context()).ClientAddr, b.v6Prefix)
	// Security: a token the introspection endpoint vouched for within
	// oauth.RecentlyValid, in this replica or (through the shared limits)
	// another, is no guess, so it is let past the block and the
	// per-address quota, and asked about within the budget kept for such
	// tokens: strangers flooding porthole with random tokens, from however
	// many addresses, cannot make a caller whose held answer ran out wait
	// behind them.
	needsFetch := offer && errors.Is(held, oauth.ErrNeedsFetch)
	recent := needsFetch && b.oa.Validator.WasRecentlyValid(token)
	vouchedElsewhere := needsFetch && !recent && b.failures.Vouched(r.Context(), oauth.Digest(token))
	recent = recent || vouchedElsewhere
	if !recent && b.blocked(w, r, addr) {
		return
	}
	reason := tokens.ErrUnknownToken.Error()
	if offer {
		err := held
		if needsFetch {
			var answered bool
			if answered, err = b.fetch(w, r, inner, token, addr, recent, vouchedElsewhere); answered {
				return
			}
		}
		// The reason goes to the audit record and the operations log
		// (redacted), never to the client.
		reason = "an OAuth access token porthole refuses: " + strings.TrimPrefix(err.Error(), oauth.ErrInvalidToken.Error()+": ")
	}
	b.refuse(w, r, addr, refused, reason)
}

// fetch decides on an OAuth token the network must be asked about (a key
// to fetch, or introspection), within the address's quota unless the
// token was recently valid; it reports whether it answered the request,
// and otherwise why the token was refused.
func (b *bearerAuth) fetch(w http.ResponseWriter, r *http.Request, inner http.Handler, token, addr string, recent, vouchedElsewhere bool) (answered bool, refusal error) {
	if !recent && !b.quota.Allow(addr) {
		b.g.introspectionBusy(w, r, errIntrospectionQuota)
		return true, nil
	}
	id, err := b.oa.validate(r.Context(), token, vouchedElsewhere)
	if err == nil {
		// The other replicas learn it was vouched for.
		if d := min(oauth.RecentlyValid, time.Until(id.Expiry)); d > 0 {
			b.failures.Vouch(r.Context(), oauth.Digest(token), d)
		}
	}
	return b.decided(w, r, inner, id, err), err
}

// decided answers a request whose OAuth token the validator decided on:
// admitted, or refused for a fault of porthole's (503); it reports whether
// it answered. A token refused as invalid is left to the caller.
func (b *bearerAuth) decided(w http.ResponseWriter, r *http.Request, inner http.Handler, id *oauth.Identity, err error) bool {
	switch {
	case err == nil:
		b.g.admitOAuth(w, r, inner, b.oa, id)
	case errors.Is(err, oauth.ErrWithdrawalsUnknown):
		b.g.oauthUnavailable(w, r, err)
	case errors.Is(err, oauth.ErrIntrospectionBusy):
		b.g.introspectionBusy(w, r, err)
	default:
		return false
	}
	return true
}

// blocked refuses a request from an address past its failed-attempt
// limit (429), or when the shared counts cannot be read (503), and
// reports whether it did.
func (b *bearerAuth) blocked(w http.ResponseWriter, r *http.Request, addr string) bool {
	blocked, after, err := b.failures.Blocked(r.Context(), addr)
	switch {
	case err != nil:
		// The shared counts cannot be read: refused (503) as a call is,
		// so that a guesser gains no unlimited window.
		b.g.limitsUnavailable(w, r, nil, err)
	case blocked:
		// Too many failures from this address: refused before anything
		// costlier than the lookup above (an issuer's keys,
		// introspection) could be asked.
		b.g.tooManyRequests(w, r, "failed-auth", after, nil, "too many failed authentications from this address")
	default:
		return false
	}
	return true
}

// refuse answers a token that was sent and refused with the one 401,
// error="invalid_token" (RFC 6750), counting one failure of addr. An
// expired static token is answered as an unknown one, but its record says
// so and names the principal: a reviewer wants to tell a stale agent from
// a stranger.
func (b *bearerAuth) refuse(w http.ResponseWriter, r *http.Request, addr string, refused error, reason string) {
	if err := b.failures.Failed(r.Context(), addr); err != nil {
		// Still a 401; the failure went uncounted, which the breaker's
		// log line and metrics already say.
		b.g.log.Debug("a failed authentication was not counted", zap.Error(err))
	}
	if errors.Is(refused, tokens.ErrExpiredToken) {
		b.g.metrics.authFailed("expired-token")
		b.g.denied(r, audit.OutcomeUnauthenticated, http.StatusUnauthorized, refused.Error())
	} else {
		b.g.metrics.authFailed("unknown-token")
		b.g.denied(r, audit.OutcomeUnauthenticated, http.StatusUnauthorized, reason)
	}
	unauthorized(w, true, b.oa)
}

// Each client address (limit.AddrKey) may have porthole ask the network
// about introspectionPerAddressBurst tokens at once, and one more every
// introspectionPerAddressEvery: a third of the budget the validator keeps
// for tokens not recently valid, so that no one address takes it all,
// while every client behind one untrusted ingress (one address) still
// gets that third.
const (
	introspectionPerAddressBurst = 10
	introspectionPerAddressEvery = 200 * time.Millisecond
)

var errIntrospectionQuota = errors.New("porthole is asking about too many tokens from this address now")

// introspectionBusy answers a token porthole cannot ask about now (its
// address's quota, or the bound across all callers, is spent): not the
// token's failure, so 503 and not counted as one.
func (g *Server) introspectionBusy(w http.ResponseWriter, r *http.Request, err error) {
	g.metrics.rateLimited("introspection")
	g.denied(r, audit.OutcomeUnavailable, http.StatusServiceUnavailable, err.Error())
	w.Header().Set("Retry-After", "1")
	http.Error(w, "porthole cannot check this access token now; retry shortly", http.StatusServiceUnavailable)
}

// oauthUnavailable answers a valid token porthole cannot accept now
// because the withdrawals file cannot be read: a fault of porthole's, so
// 503 and no failed authentication counted against the address.
func (g *Server) oauthUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	g.metrics.authFailed("withdrawals-unknown")
	g.denied(r, audit.OutcomeUnavailable, http.StatusServiceUnavailable, err.Error())
	w.Header().Set("Retry-After", "5")
	http.Error(w, "porthole cannot check this access token now; retry shortly", http.StatusServiceUnavailable)
}

// admitOAuth serves a request with a valid OAuth access token, or answers
// 403 when the token lacks a scope every call needs.
func (g *Server) admitOAuth(w http.ResponseWriter, r *http.Request, inner http.Handler, oa *OAuthOptions, id *oauth.Identity) {
	if scope := oa.missingScope(id); scope != "" {
		g.metrics.authFailed("insufficient-scope")
		ctx := context.WithValue(context.WithValue(r.Context(), principalKey{}, id.Principal), identityKey{}, id)
		g.denied(r.WithContext(ctx), audit.OutcomeDenied, http.StatusForbidden,
			fmt.Sprintf("an OAuth access token of %s without the scope %s", id.Principal, scope))
		oa.insufficientScope(w, scope)
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), principalKey{}, id.Principal), identityKey{}, id)
	inner.ServeHTTP(w, r.WithContext(ctx))
}

// unauthorized writes porthole's one 401. invalid says a token was sent and
// refused, which RFC 6750 signals with error="invalid_token"; with OAuth
// the challenge names the protected resource metadata and the scopes.
func unauthorized(w http.ResponseWriter, invalid bool, oa *OAuthOptions) {
	code := ""
	if invalid {
		code = "invalid_token"
	}
	w.Header().Set("WWW-Authenticate", oa.challenge(code))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(unauthorizedBody))
}
