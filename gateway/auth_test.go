package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const listToolsBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// newTestFront is a front whose failed-authentication limit never trips:
// many cases here fail authentication from one address on purpose, and the
// limit has tests of its own.
func newTestFront(t *testing.T) (url, token string) {
	t.Helper()
	f := newFront(t, HTTPOptions{FailedAuthBurst: 1 << 20})
	return f.url, f.alice
}

func post(t *testing.T, url string, header http.Header, body string) (*http.Response, string) {
	return send(t, http.MethodPost, url, header, body)
}

// send makes one request with MCP's content headers, header on top, and
// returns the response with its body read.
func send(t *testing.T, method, url string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestBearerAuthenticationIsStrict(t *testing.T) {
	t.Parallel()
	url, token := newTestFront(t)
	cases := []struct {
		name       string
		auth       []string
		wantStatus int
		invalid    bool // error="invalid_token" expected
	}{
		{"the valid token is admitted", []string{"Bearer " + token}, http.StatusOK, false},
		{"no Authorization header is refused", nil, http.StatusUnauthorized, false},
		{"an empty Bearer is refused", []string{"Bearer "}, http.StatusUnauthorized, false},
		{"a lowercase scheme is refused", []string{"bearer " + token}, http.StatusUnauthorized, false},
		{"another scheme is refused", []string{"Basic " + token}, http.StatusUnauthorized, false},
		{"two spaces after the scheme are refused", []string{"Bearer  " + token}, http.StatusUnauthorized, false},
		// RFC 9110 excludes surrounding whitespace from a field value, and
		// Go's parser strips it before porthole sees the header: the
		// request is the valid one.
		{"a trailing space is stripped by HTTP, leaving the valid token", []string{"Bearer " + token + " "}, http.StatusOK, false},
		{"a tab instead of the space is refused", []string{"Bearer\t" + token}, http.StatusUnauthorized, false},
		{"a token off by one byte is refused", []string{"Bearer " + token[:len(token)-1] + flip(token[len(token)-1])}, http.StatusUnauthorized, true},
		{"a token prefix is refused", []string{"Bearer " + token[:len(token)-4]}, http.StatusUnauthorized, true},
		{"a token with a suffix is refused", []string{"Bearer " + token + "x"}, http.StatusUnauthorized, true},
		{"two Authorization headers are refused", []string{"Bearer " + token, "Bearer " + token}, http.StatusUnauthorized, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, a := range tc.auth {
				h.Add("Authorization", a)
			}
			resp, body := post(t, url+"/mcp", h, listToolsBody)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d; body %.200q", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != http.StatusUnauthorized {
				if !strings.Contains(body, "list_workflows") {
					t.Fatalf("admitted request did not list tools: %q", body)
				}
				return
			}
			if body != unauthorizedBody {
				t.Fatalf("401 body %q, want the fixed %q", body, unauthorizedBody)
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(challenge, "Bearer") || strings.Contains(challenge, `error="invalid_token"`) != tc.invalid {
				t.Fatalf("WWW-Authenticate %q, want Bearer with invalid_token=%v", challenge, tc.invalid)
			}
		})
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func TestOnlyPostMCPIsServed(t *testing.T) {
	t.Parallel()
	url, token := newTestFront(t)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/mcp", http.StatusMethodNotAllowed},
		{"DELETE", "/mcp", http.StatusMethodNotAllowed},
		{"PUT", "/mcp", http.StatusMethodNotAllowed},
		{"POST", "/", http.StatusNotFound},
		{"POST", "/mcp/", http.StatusNotFound},
		{"POST", "/MCP", http.StatusNotFound},
		{"POST", "/healthz", http.StatusNotFound},
	} {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(listToolsBody))
		req.Header = auth.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestHandlerRefusesToServeWithoutTokensUnlessTold(t *testing.T) {
	t.Parallel()
	g := mustServer(t, &fakeReader{})
	if _, err := g.Handler(HTTPOptions{}); err != ErrNoAuthentication {
		t.Fatalf("Handler without tokens = %v, want ErrNoAuthentication", err)
	}
	h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if resp, _ := post(t, srv.URL+"/mcp", nil, listToolsBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("unauthenticated mode answered %d", resp.StatusCode)
	}
}
