package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// AuthorizationResponse is what the provider sent to the client's redirect
// URI (RFC 6749 §4.1.2, RFC 9207): the fields the go-sdk's
// auth.AuthorizationResult takes.
type AuthorizationResponse struct {
	Code  string
	State string
	Iss   string
}

// CodeRequest is one run of the authorization-code flow.
type CodeRequest struct {
	Account     string   // the login name; the account's sub
	Resource    string   // the token's aud
	Scopes      []string // asked for
	ClientID    string   // a public client; default PublicClientID
	RedirectURI string   // default RedirectURI
}

// AuthorizationCodeToken runs the flow a person's client runs: an
// authorization request with PKCE (S256) and a resource, the provider's
// development login and consent as Account, then the code exchanged for an
// access token at the token endpoint.
func (p *Provider) AuthorizationCodeToken(ctx context.Context, r CodeRequest) (TokenResponse, error) {
	if r.ClientID == "" {
		r.ClientID = PublicClientID
	}
	if r.RedirectURI == "" {
		r.RedirectURI = RedirectURI
	}
	verifier := rand.Text() + rand.Text() // 52 characters of the RFC 7636 alphabet
	challenge := sha256.Sum256([]byte(verifier))
	state := rand.Text()
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {r.ClientID},
		"redirect_uri":          {r.RedirectURI},
		"scope":                 {strings.Join(r.Scopes, " ")},
		"state":                 {state},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(challenge[:])},
		"code_challenge_method": {"S256"},
		"resource":              {r.Resource},
	}
	got, err := p.Login(ctx, p.meta.AuthorizationEndpoint+"?"+q.Encode(), r.Account)
	if err != nil {
		return TokenResponse{}, err
	}
	if got.State != state {
		return TokenResponse{}, fmt.Errorf("oidctest: the redirect carried state %q, not %q", got.State, state)
	}
	if got.Iss != p.issuer {
		return TokenResponse{}, fmt.Errorf("oidctest: the redirect carried iss %q, not %q", got.Iss, p.issuer)
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {got.Code},
		"redirect_uri":  {r.RedirectURI},
		"code_verifier": {verifier},
		"resource":      {r.Resource},
	}
	var tok TokenResponse
	err = p.post(p.meta.TokenEndpoint, clientAuth{id: r.ClientID}, form, &tok)
	return tok, err
}

// Login plays the person at a browser: it opens authURL, an authorization
// request built by any client (the go-sdk's auth.AuthorizationCodeHandler
// passes one to its AuthorizationCodeFetcher), signs in on the provider's
// development login form as account, consents, and returns what the
// provider sends to the redirect URI, which it does not visit. Cookies live
// in a jar of this call alone.
func (p *Provider) Login(ctx context.Context, authURL, account string) (AuthorizationResponse, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return AuthorizationResponse{}, err
	}
	browser := &http.Client{
		Jar:     jar,
		Timeout: p.client.Timeout,
		// Each redirect is looked at here: the last one leaves the provider.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	next, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return AuthorizationResponse{}, err
	}
	// Login and consent take two pages and six redirects; a loop past this
	// bound is a provider gone wrong.
	for range 16 {
		resp, err := browser.Do(next)
		if err != nil {
			return AuthorizationResponse{}, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return AuthorizationResponse{}, err
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			loc, err := resp.Location()
			if err != nil {
				return AuthorizationResponse{}, err
			}
			if !strings.HasPrefix(loc.String(), p.issuer+"/") {
				return redirected(loc)
			}
			if next, err = http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil); err != nil {
				return AuthorizationResponse{}, err
			}
		case resp.StatusCode == http.StatusOK:
			if next, err = p.submit(ctx, resp.Request.URL, body, account); err != nil {
				return AuthorizationResponse{}, err
			}
		default:
			return AuthorizationResponse{}, fmt.Errorf("oidctest: %s answered %s: %.300s", resp.Request.URL, resp.Status, body)
		}
	}
	return AuthorizationResponse{}, errors.New("oidctest: the login did not reach the redirect URI in 16 steps")
}

// redirected reads the authorization response from the redirect URI.
func redirected(loc *url.URL) (AuthorizationResponse, error) {
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return AuthorizationResponse{}, &Error{Status: http.StatusFound, Code: e, Description: q.Get("error_description")}
	}
	if q.Get("code") == "" {
		return AuthorizationResponse{}, fmt.Errorf("oidctest: the provider redirected to %s without a code", loc.Redacted())
	}
	return AuthorizationResponse{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

var (
	formAction = regexp.MustCompile(`<form[^>]*\saction="([^"]*)"`)
	formPrompt = regexp.MustCompile(`<input type="hidden" name="prompt" value="([a-z]+)"/>`)
)

// submit fills in the development interaction page as a person would: the
// login form with account and any password, or the consent form as it is.
func (p *Provider) submit(ctx context.Context, page *url.URL, body []byte, account string) (*http.Request, error) {
	action, prompt := formAction.FindSubmatch(body), formPrompt.FindSubmatch(body)
	if action == nil || prompt == nil {
		return nil, fmt.Errorf("oidctest: %s shows no interaction form: %.300s", page, body)
	}
	target, err := page.Parse(html.UnescapeString(string(action[1])))
	if err != nil {
		return nil, err
	}
	form := url.Values{"prompt": {string(prompt[1])}}
	switch string(prompt[1]) {
	case "login":
		form.Set("login", account)
		form.Set("password", "any password passes the development login")
	case "consent":
	default:
		return nil, fmt.Errorf("oidctest: %s asks for %q, which this helper cannot answer", page, prompt[1])
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}
