package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A panic in a later handler becomes a 500 with a fixed body, and the
// panic goes to the operations log with the request's id; the server goes
// on serving.
func TestAPanicBecomesA500AndALogLine(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.ErrorLevel)
	g := &Server{log: zap.New(core)}
	h := identify(TrustedProxies{}, false)(g.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("the secret is 1234")
	})))
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
		if w.Code != http.StatusInternalServerError || w.Body.String() != "internal error\n" {
			t.Fatalf("%d %q", w.Code, w.Body.String())
		}
	}
	if n := logs.FilterMessage("panic serving a request").Len(); n != 2 {
		t.Fatalf("%d log lines", n)
	}
	if id := logs.All()[0].ContextMap()["requestId"]; id == "" || id == nil {
		t.Error("the log line names no request id")
	}
}
