package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/porthole-dev/porthole/audit"
)

func TestAClientHangingUpDoesNotSuppressTheResultRecord(t *testing.T) {
	t.Parallel()
	r := &fakeReader{hold: true}
	g, a := newTestServer(t, r)
	h, err := g.Handler(HTTPOptions{DangerouslyServeWithoutAuthentication: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_namespace","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, func() bool { return r.count() == 1 })
	cancel() // the client hangs up while Temporal is "answering"
	<-done
	waitFor(t, func() bool {
		for _, rec := range a.all() {
			if rec.Kind == audit.KindResult {
				return true
			}
		}
		return false
	})
}
