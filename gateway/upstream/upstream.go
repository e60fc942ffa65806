package upstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/porthole-dev/porthole/gateway/tlsclient"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/porthole-dev/porthole/policy"
	"github.com/porthole-dev/porthole/redact/quote"
)

// States of an upstream's connection.
const (
	StateConnecting = "connecting"
	StateUp         = "up"
	StateDown       = "down"
)

// How an upstream's tool list is kept fresh.
const (
	// ListNotified: the upstream holds a stream to porthole (stdio, SSE)
	// and declared tools.listChanged, so its notifications/tools/list_changed
	// invalidate the list.
	ListNotified = "list_changed"
	// ListTTL: the list is read again every ListTTL.
	ListTTL = "ttl"
)

// Backoff between connection attempts. It grows while attempts fail and
// starts over after a session that lived longer than stableAfter.
const (
	minBackoff  = 250 * time.Millisecond
	maxBackoff  = 30 * time.Second
	stableAfter = 30 * time.Second
	keepAlive   = 15 * time.Second
	// minListInterval bounds how often notifications make porthole read
	// an upstream's tool list again.
	minListInterval = time.Second
)

// Errors a call can end with. Their text is a sentence for the client.
var (
	ErrUnavailable = errors.New("the upstream is not connected")
	ErrWithheld    = errors.New("the tool is withheld")
	ErrTimeout     = errors.New("the upstream did not answer in time")
)

// Events tell porthole what an upstream did. Each may be nil.
type Events struct {
	// Withheld is called once per tool, reason and definition: a tool the
	// upstream offers that porthole does not expose, or a roster tool the
	// upstream does not offer.
	Withheld func(upstream, tool, reason string)
	// Changed is called once per new definition of a pinned tool whose
	// digest no longer matches the pin: the tool is withheld until
	// re-pinned, and porthole audits the change.
	Changed func(upstream, tool, pinned, now string)
	// ToolsChanged is called when the set of exposed tools changed.
	ToolsChanged func()
}

// Options configure a Set.
type Options struct {
	Logger *zap.Logger
	Events Events
	// Version is what porthole tells upstreams it is.
	Version string
	// Clean makes a line of a child's stderr safe to log (redaction);
	// default identity.
	Clean func(string) string
}

// Tool is an exposed upstream tool.
type Tool struct {
	Upstream string
	Name     string // the upstream's name for it
	Digest   string
	// Def is the definition porthole serves: the served name, and the
	// reviewed title, description and input schema.
	Def *mcp.Tool
	// Arguments are the argument names the input schema declares; nothing
	// else is passed on.
	Arguments map[string]bool
}

// Status is what /readyz and the metrics say of an upstream.
type Status struct {
	Name      string
	Transport string
	State     string
	Reason    string // why it is down
	Since     time.Time
	Exposed   int
	Withheld  int
	ListMode  string
	ListedAt  time.Time
	Restarts  int
}

// Upstream is one roster entry's connection and its tool list.
type Upstream struct {
	Entry    Entry
	endpoint string
	token    string
	childEnv []string
	opts     Options
	log      *zap.Logger
	refresh  chan struct{}
	// killGroup kills the process group of the current stdio child; only
	// the run goroutine (serve, connect, transport) touches it.
	killGroup func()
	// budget is this upstream's share of the roster's MaxBytesInFlight,
	// which every upstream of the set shares.
	budget *budget

	mu          sync.Mutex
	passed      *breach // the bound the session's upstream passed, if it did
	session     *mcp.ClientSession
	state       string
	reason      string
	since       time.Time
	exposed     map[string]*Tool
	withheld    map[string]string
	listMode    string
	listedAt    time.Time
	restarts    int
	noticed     map[noticeKind]map[string]bool // notices already told, by kind
	noticedFull [3]bool                        // kinds whose budget is spent
}

// Set is every upstream of a roster.
type Set struct {
	list   []*Upstream
	byName map[string]*Upstream
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ErrNotResolved is returned by NewSet for a roster Resolve has not read:
// its secrets would be sent without the redactor knowing them.
var ErrNotResolved = errors.New("upstream: the roster has not been resolved (Roster.Resolve)")

// NewSet builds the upstreams of a roster with the values Resolve read.
// Nothing connects until Start.
func NewSet(r *Roster, opts Options) (*Set, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clean == nil {
		opts.Clean = func(s string) string { return s }
	}
	res := r.resolved
	if res == nil && len(r.Upstreams) > 0 {
		return nil, ErrNotResolved
	}
	s := &Set{byName: map[string]*Upstream{}}
	size := cmp.Or(r.MaxBytesInFlight, DefaultMaxBytesInFlight)
	shared := semaphore.NewWeighted(size)
	for i, e := range r.Upstreams {
		u := &Upstream{
			Entry: e, opts: opts, log: opts.Logger.With(zap.String("upstream", e.Name)),
			refresh: make(chan struct{}, 1), state: StateConnecting, since: time.Now(),
			exposed: map[string]*Tool{}, withheld: map[string]string{}, noticed: map[noticeKind]map[string]bool{},
			endpoint: res[i].endpoint, token: res[i].token, childEnv: res[i].childEnv,
		}
		u.budget = newBudget(shared, size, u.messageLimit())
		s.list = append(s.list, u)
		s.byName[e.Name] = u
	}
	return s, nil
}

// Start connects every upstream in the background and keeps it connected
// until Close.
func (s *Set) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	for _, u := range s.list {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			u.run(ctx)
		}()
	}
}

// Close disconnects every upstream and stops every child.
func (s *Set) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// Upstreams are the set's upstreams in roster order.
func (s *Set) Upstreams() []*Upstream { return s.list }

// Lookup finds the upstream and tool a served name stands for.
func (s *Set) Lookup(served string) (*Upstream, string, bool) {
	if s == nil {
		return nil, "", false
	}
	name, tool, ok := strings.Cut(served, Separator)
	if !ok {
		return nil, "", false
	}
	u := s.byName[name]
	return u, tool, u != nil
}

// Tools are every exposed tool of every upstream.
func (s *Set) Tools() []*Tool {
	if s == nil {
		return nil
	}
	var all []*Tool
	for _, u := range s.list {
		all = append(all, u.Tools()...)
	}
	return all
}

// Tools are the upstream's exposed tools, by name. An upstream that went
// down keeps them: calls answer that it is down rather than the tools
// vanishing.
func (u *Upstream) Tools() []*Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]*Tool, 0, len(u.exposed))
	for _, name := range slices.Sorted(maps.Keys(u.exposed)) {
		out = append(out, u.exposed[name])
	}
	return out
}

// Tool is the exposed tool of that name, or nil.
func (u *Upstream) Tool(name string) *Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.exposed[name]
}

// Status reports the upstream's connection and list.
func (u *Upstream) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	return Status{
		Name: u.Entry.Name, Transport: u.Entry.Transport, State: u.state, Reason: u.reason, Since: u.since,
		Exposed: len(u.exposed), Withheld: len(u.withheld), ListMode: u.listMode, ListedAt: u.listedAt, Restarts: u.restarts,
	}
}

// Call calls an exposed tool with arguments the caller has checked.
func (u *Upstream) Call(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
	u.mu.Lock()
	cs, t, passed := u.session, u.exposed[tool], u.passed
	u.mu.Unlock()
	if t == nil {
		return nil, ErrWithheld
	}
	if cs == nil {
		return nil, ErrUnavailable
	}
	ctx, cancel := context.WithTimeout(ctx, u.Entry.Timeout)
	defer cancel()
	var box *liftBox
	if u.Entry.Transport == TransportStreamable {
		ctx, box = withLiftBox(ctx, u.messageLimit())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		box.restore(res)
		return res, nil
	case errors.As(err, &rpcErr) && !localCode(rpcErr.Code):
		return nil, rpcErr // the upstream answered, with a protocol error
	case passed.get() != nil:
		// The upstream passed a bound, and the session ended for it:
		// every call on it fails with that sentence.
		return nil, passed.get()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, ErrTimeout
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	if !sessionGone(err) {
		// One call failed (the upstream answered 429 or 503, or sent what
		// the client could not read): the session stays for other calls.
		return nil, fmt.Errorf("calling %q: %w", tool, err)
	}
	// The connection failed: end the session, and the supervisor
	// connects again, with backoff.
	_ = cs.Close()
	return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
}

// sessionGone reports whether err means the session itself has ended (the
// connection closed, the child exited, the network failed), rather than
// that one request failed.
func sessionGone(err error) bool {
	var ne net.Error
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.As(err, &ne)
}

// localCode reports whether a JSON-RPC error code is one the go-sdk makes
// up for a failure on porthole's side of the connection (the transport
// rejected the message, the client or server is closing) rather than one
// the upstream sent.
func localCode(code int64) bool {
	return code == -32003 || code == -32004 || code == -32005
}

// run keeps the upstream connected: connect, read the tool list, serve
// until the session ends, and again after a backoff. A stdio child that
// dies is started again this way.
func (u *Upstream) run(ctx context.Context) {
	backoff := minBackoff
	for {
		start := time.Now()
		err := u.serve(ctx)
		if ctx.Err() != nil {
			u.setDown(errors.New("porthole is stopping"))
			return
		}
		u.setDown(err)
		if time.Since(start) > stableAfter {
			backoff = minBackoff
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
		u.mu.Lock()
		u.restarts++
		u.state = StateConnecting
		u.mu.Unlock()
	}
}

// serve runs one session until it ends.
func (u *Upstream) serve(ctx context.Context) error {
	// Last, once the session is closed: the child's whole process group
	// goes, even when the child itself has already exited (os/exec kills
	// through cmd.Cancel only a child that has not), so a launcher's
	// grandchildren (npx's node) do not outlive it.
	defer func() {
		if u.killGroup != nil {
			u.killGroup()
			u.killGroup = nil
		}
	}()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, passed, err := u.connect(sctx, cancel)
	if err != nil {
		return passed.or(err)
	}
	defer cs.Close()

	mode := listMode(cs, u.Entry.Transport)
	if err := u.list(sctx, cs, passed); err != nil {
		return passed.or(fmt.Errorf("listing tools: %w", err))
	}
	u.mu.Lock()
	u.passed = passed
	u.session, u.state, u.reason, u.since, u.listMode = cs, StateUp, "", time.Now(), mode
	u.mu.Unlock()
	u.log.Info("upstream connected", zap.String("transport", u.Entry.Transport), zap.String("listMode", mode))
	return u.follow(sctx, cs, passed, mode)
}

// listMode is how an upstream's tool list is kept fresh: when it says it
// will notify, and its transport carries notifications, by its
// list_changed; otherwise read again every ListTTL.
func listMode(cs *mcp.ClientSession, transport string) string {
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Tools != nil && caps.Tools.ListChanged &&
		(transport == TransportStdio || transport == TransportSSE) {
		return ListNotified
	}
	return ListTTL
}

// follow keeps a connected session's tool list fresh until the session
// ends, porthole stops, or the upstream passes a bound.
func (u *Upstream) follow(sctx context.Context, cs *mcp.ClientSession, passed *breach, mode string) error {
	last := time.Now()
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	var ttl <-chan time.Time
	if mode == ListTTL {
		t := time.NewTicker(u.Entry.ListTTL)
		defer t.Stop()
		ttl = t.C
	}
	for {
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("the session ended")
			}
			return passed.or(err)
		case <-sctx.Done():
			// porthole is stopping, or the upstream passed a bound
			// (breach ends the session's context).
			return passed.or(sctx.Err())
		case <-u.refresh:
		case <-ttl:
		}
		// An upstream decides when it sends list_changed; at most one
		// list a second is read however often it does.
		select {
		case <-sctx.Done():
			return passed.or(sctx.Err())
		case <-time.After(time.Until(last.Add(minListInterval))):
		}
		last = time.Now()
		if err := u.list(sctx, cs, passed); err != nil {
			// A list that cannot be read keeps the last one; a session
			// that is gone is started again.
			// A list past its bounds, or a message past its bound,
			// ends the session too: the upstream is down until it
			// connects again.
			u.log.Warn("upstream tool list not read", zap.Error(err))
			if sessionGone(err) || errors.Is(err, ErrListTooLarge) || passed.get() != nil {
				return passed.or(err)
			}
		}
	}
}

// connect starts a session: the child or the HTTP connection, and the
// initialize handshake, within the entry's timeout (cancel ends ctx when
// it passes). The session lives on ctx after that.
func (u *Upstream) connect(ctx context.Context, cancel context.CancelFunc) (*mcp.ClientSession, *breach, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "porthole", Version: u.opts.Version}, &mcp.ClientOptions{
		// porthole asks nothing of a client and lets an upstream ask
		// nothing of porthole: no roots, no sampling, no elicitation.
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { u.invalidate() },
		KeepAlive:              keepAlive,
	})
	passed := &breach{log: u.log, end: cancel}
	client.AddReceivingMiddleware(boundRequests(passed))
	timer := time.AfterFunc(u.Entry.Timeout, cancel)
	cs, err := client.Connect(ctx, u.transport(ctx, passed), nil)
	if !timer.Stop() {
		if cs != nil {
			_ = cs.Close()
		}
		return nil, passed, fmt.Errorf("connecting took longer than %s", u.Entry.Timeout)
	}
	if err != nil {
		return nil, passed, fmt.Errorf("connecting: %w", err)
	}
	return cs, passed, nil
}

// Offered connects once and returns every tool the upstream offers, as it
// defines them: what `porthole roster pin` digests.
func (u *Upstream) Offered(ctx context.Context) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, passed, err := u.connect(ctx, cancel)
	if err != nil {
		return nil, passed.or(err)
	}
	defer cs.Close()
	offered, err := u.readTools(ctx, cs, passed)
	if err != nil {
		return nil, passed.or(fmt.Errorf("listing tools: %w", err))
	}
	return offered, nil
}

// readTools reads the upstream's whole tool list, page by page, within the
// entry's timeout, MaxListPages and MaxListBytes (the tools as JSON): what
// porthole holds of a list is bounded, whatever the size of each page.
func (u *Upstream) readTools(ctx context.Context, cs *mcp.ClientSession, passed *breach) ([]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, u.Entry.Timeout)
	defer cancel()
	maxPages, maxBytes := cmp.Or(u.Entry.MaxListPages, DefaultMaxListPages), cmp.Or(u.Entry.MaxListBytes, DefaultMaxListBytes)
	var offered []*mcp.Tool
	var size int64
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("%w: more than %d pages (maxListPages)", ErrListTooLarge, maxPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, passed.or(err)
		}
		for _, t := range res.Tools {
			b, err := json.Marshal(t)
			if err != nil {
				return nil, fmt.Errorf("a tool's definition cannot be read: %w", err)
			}
			if size += int64(len(b)); size > maxBytes {
				return nil, fmt.Errorf("%w: more than %d bytes (maxListBytes)", ErrListTooLarge, maxBytes)
			}
		}
		offered = append(offered, res.Tools...)
		if len(offered) > 10000 {
			return nil, errors.New("the upstream offers more than 10000 tools")
		}
		if res.NextCursor == "" {
			return offered, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// breach is the first bound a session's upstream passed, which ends the
// session: the go-sdk reports it only as the connection failing, or (on
// the standalone stream of streamable HTTP) not at all, reconnecting the
// stream. Its methods take a nil breach as one that was never passed.
type breach struct {
	log *zap.Logger
	end context.CancelFunc // ends the session; may be nil
	mu  sync.Mutex
	err error
}

func (b *breach) set(err error) {
	if b == nil {
		return
	}
	b.mu.Lock()
	first := b.err == nil
	if first {
		b.err = err
	}
	b.mu.Unlock()
	if !first {
		return
	}
	if b.log != nil {
		b.log.Warn("upstream passed a bound; ending the session", zap.Error(err))
	}
	if b.end != nil {
		b.end()
	}
}

// get is the bound passed, or nil.
func (b *breach) get() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// or is the bound passed, if one was, else err.
func (b *breach) or(err error) error {
	if p := b.get(); p != nil {
		return p
	}
	return err
}

// frames reads r within the entry's MaxMessageBytes and the set's budget.
// A bound passed is set on passed.
func (u *Upstream) frames(r io.Reader, kind frameKind, passed *breach) *frameReader {
	return &frameReader{r: r, kind: kind, limit: u.messageLimit(), budget: u.budget, breach: passed.set, keepOpen: kind == frameLine}
}

func (u *Upstream) messageLimit() int64 {
	return cmp.Or(u.Entry.MaxMessageBytes, DefaultMaxMessageBytes)
}

// invalidate asks for the tool list to be read again.
func (u *Upstream) invalidate() {
	select {
	case u.refresh <- struct{}{}:
	default:
	}
}

func (u *Upstream) setDown(err error) {
	u.mu.Lock()
	wasUp := u.state == StateUp
	u.session, u.state, u.reason = nil, StateDown, err.Error()
	if wasUp {
		u.since = time.Now()
	}
	u.mu.Unlock()
	u.log.Warn("upstream down", zap.Error(err))
}

// transport builds the connection for the entry's transport: a child
// process for stdio, an HTTP client for the others, each reading within
// the bounds and telling passed of the first it passes.
func (u *Upstream) transport(ctx context.Context, passed *breach) mcp.Transport {
	switch u.Entry.Transport {
	case TransportStdio:
		cmd := exec.CommandContext(ctx, u.Entry.Command, u.Entry.Args...)
		cmd.Env = u.childEnv
		cmd.WaitDelay = 5 * time.Second
		cmd.Stderr = newStderrLog(u)
		u.killGroup = ownProcessGroup(cmd)
		return &stdioTransport{cmd: cmd, terminate: 2 * time.Second, bound: func(r io.Reader) *frameReader { return u.frames(r, frameLine, passed) }}
	case TransportSSE:
		return &mcp.SSEClientTransport{Endpoint: u.endpoint, HTTPClient: u.httpClient(passed), MaxEventSize: int(u.messageLimit()) + frameSlack}
	default:
		return &mcp.StreamableClientTransport{Endpoint: u.endpoint, HTTPClient: u.httpClient(passed), MaxRetries: 2, MaxEventSize: int(u.messageLimit()) + frameSlack}
	}
}

// httpClient talks to the entry's endpoint and nowhere else, and reads
// every response body within the entry's bounds (boundedBodies). It follows no
// redirect, and it refuses any request to another scheme, host or port: an
// SSE upstream names the URL porthole posts to in its first event, and a
// hostile one could name a host of its choosing, over plain http, to be
// sent the token (or to make porthole post into the cluster).
func (u *Upstream) httpClient(passed *breach) *http.Client {
	origin, _ := url.Parse(u.endpoint)
	return &http.Client{
		Transport: bearer{token: u.token, upstream: u.Entry.Name, origin: origin, next: boundedBodies{u: u, passed: passed, next: &http.Transport{
			Proxy: http.ProxyFromEnvironment, ResponseHeaderTimeout: u.Entry.Timeout,
			TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 16, TLSClientConfig: tlsclient.Config(),
			// A transport given a TLS configuration speaks HTTP/2 only
			// when asked to.
			ForceAttemptHTTP2: true,
		}}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// bearer sends the token with every request to the upstream's origin and
// refuses every request elsewhere.
type bearer struct {
	token    string
	upstream string
	origin   *url.URL
	next     http.RoundTripper
}

// errOtherOrigin is a request the upstream pointed somewhere else.
var errOtherOrigin = errors.New("porthole sends requests only to the scheme, host and port the roster names")

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.origin == nil || !strings.EqualFold(r.URL.Scheme, b.origin.Scheme) || !strings.EqualFold(r.URL.Host, b.origin.Host) {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("upstream %q pointed porthole at %s://%s: %w", b.upstream, r.URL.Scheme, r.URL.Host, errOtherOrigin)
	}
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// stderrLog logs what a child writes to stderr, a line at a time (lines
// are put back together across the chunks os/exec copies, so an exact
// secret split between two writes is still redacted), each line capped and
// cleaned, at most stderrRate lines a second: a child cannot flood
// porthole's log. Dropped lines are counted in the next line logged.
type stderrLog struct {
	u       *Upstream
	mu      sync.Mutex
	partial []byte
	limit   *rate.Limiter
	dropped int
}

const (
	maxStderrLine = 512
	stderrRate    = 20
	stderrBurst   = 200
)

func newStderrLog(u *Upstream) *stderrLog {
	return &stderrLog{u: u, limit: rate.NewLimiter(stderrRate, stderrBurst)}
}

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > maxStderrLine {
		// A line without end: log what fits, drop the rest of it.
		l.line(l.partial[:maxStderrLine])
		l.partial = l.partial[:0]
	}
	l.partial = append([]byte(nil), l.partial...) // do not pin p's array
	return len(p), nil
}

func (l *stderrLog) line(b []byte) {
	if len(b) == 0 {
		return
	}
	if !l.limit.Allow() {
		l.dropped++
		return
	}
	// Redacted whole, then cleaned and capped as quoted text is (the
	// quoter need not redact again): the log's JSON escapes control
	// characters but not line separators or bidi overrides, which a child
	// could use to forge or hide log lines.
	line := quote.New(nil).OfUpTo(quote.OriginUpstream(l.u.Entry.Name), l.u.clean(string(b)), maxStderrLine).Text
	fields := []zap.Field{zap.String("line", line)}
	if l.dropped > 0 {
		fields = append(fields, zap.Int("droppedBefore", l.dropped))
		l.dropped = 0
	}
	l.u.log.Info("upstream stderr", fields...)
}

// list reads the upstream's tool list and decides, tool by tool, what is
// exposed.
func (u *Upstream) list(ctx context.Context, cs *mcp.ClientSession, passed *breach) error {
	offered, err := u.readTools(ctx, cs, passed)
	if err != nil {
		return err
	}
	exposed, withheld := u.decide(offered)

	u.mu.Lock()
	changed := !sameTools(u.exposed, exposed)
	u.exposed, u.withheld, u.listedAt = exposed, withheld, time.Now()
	u.mu.Unlock()
	if changed {
		u.log.Info("upstream tools exposed", zap.Strings("tools", slices.Sorted(maps.Keys(exposed))))
		if f := u.opts.Events.ToolsChanged; f != nil {
			f()
		}
	}
	return nil
}

// expose is a named tool as porthole serves it, when its definition has
// the pinned digest and can be served; or why it is withheld. A pinned
// tool whose definition changed is reported as changed.
func (u *Upstream) expose(t *mcp.Tool, pin string) (*Tool, string) {
	digest, err := Digest(t)
	var reason string
	switch {
	case err != nil:
		reason = "its definition cannot be read: " + err.Error()
	case pin != "" && pin != digest:
		reason = fmt.Sprintf("its definition changed since it was pinned (pinned %s, now %s): review it, then run porthole roster pin", short(pin), short(digest))
		u.notice(noticeChanged, t.Name+"\x00"+digest, func() {
			if f := u.opts.Events.Changed; f != nil {
				f(u.Entry.Name, t.Name, pin, digest)
			}
		})
	case pin == "":
		reason = "it is not pinned: review it, then run porthole roster pin"
	default:
		reason = unexposable(t)
	}
	if reason != "" {
		return nil, reason
	}
	tool, err := served(u.Entry.Name, t, digest)
	if err != nil {
		return nil, err.Error()
	}
	return tool, ""
}

// decide applies the conditions of exposure to each offered tool: the
// roster names it, its definition has the pinned digest, the upstream
// declares it read-only, and its name carries no mutating verb. Everything
// else is withheld, with the reason, told once. The digest is checked
// first, so that a pinned tool that changes is reported as changed whatever
// else changed with it.
func (u *Upstream) decide(offered []*mcp.Tool) (exposed map[string]*Tool, withheld map[string]string) {
	exposed, withheld = map[string]*Tool{}, map[string]string{}
	pins := map[string]string{}
	for _, p := range u.Entry.Tools {
		pins[p.Name] = p.SHA256
	}
	seen := map[string]bool{}
	for _, t := range offered {
		if t == nil || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		pin, named := pins[t.Name]
		if !named {
			// Names an upstream chooses freely: told once each, from a
			// budget of their own, so they cannot crowd out what matters.
			reason := "the roster does not name it"
			withheld[t.Name] = reason
			u.notice(noticeUnnamed, t.Name, func() { u.tellWithheld(t.Name, reason) })
			continue
		}
		tool, reason := u.expose(t, pin)
		if reason != "" {
			withheld[t.Name] = reason
			u.notice(noticeNamed, t.Name+"\x00"+reason, func() { u.tellWithheld(t.Name, reason) })
			continue
		}
		exposed[t.Name] = tool
	}
	for name := range pins {
		if !seen[name] {
			reason := "the upstream does not offer it"
			withheld[name] = reason
			u.notice(noticeNamed, name+"\x00"+reason, func() { u.tellWithheld(name, reason) })
		}
	}
	return exposed, withheld
}

// unexposable says why a tool would be withheld whatever its pin: the
// upstream does not declare it read-only, or its name carries a mutating
// verb. "" means neither.
func unexposable(t *mcp.Tool) string {
	switch {
	case t.Annotations == nil || !t.Annotations.ReadOnlyHint:
		return "the upstream does not declare it read-only (readOnlyHint)"
	}
	if verbs := policy.MutatingVerbs(t.Name); len(verbs) > 0 {
		return fmt.Sprintf("its name carries the mutating verb(s) %s", strings.Join(verbs, ", "))
	}
	if _, _, ok := objectSchema(t); !ok {
		return notObjectSchema
	}
	return ""
}

const notObjectSchema = `its input schema is not a JSON Schema of type "object"`

// objectSchema is t's input schema, decoded and as JSON, when it is a JSON
// Schema of type "object": the only kind whose arguments porthole can check
// by name.
func objectSchema(t *mcp.Tool) (schema map[string]any, raw []byte, ok bool) {
	raw, err := json.Marshal(t.InputSchema)
	if err == nil {
		err = json.Unmarshal(raw, &schema)
	}
	return schema, raw, err == nil && schema != nil && schema["type"] == "object"
}

// clean redacts s with the roster's Clean (NewSet always sets one).
func (u *Upstream) clean(s string) string {
	if u.opts.Clean == nil {
		return s
	}
	return u.opts.Clean(s)
}

func (u *Upstream) tellWithheld(tool, reason string) {
	// Redacted whole before it is escaped and cut, as the stderr lines are.
	u.log.Warn("upstream tool withheld", zap.String("tool", quote.New(nil).EscapeIdentifier(u.clean(tool))), zap.String("reason", reason))
	if f := u.opts.Events.Withheld; f != nil {
		f(u.Entry.Name, tool, reason)
	}
}

// What porthole has told of an upstream is remembered in budgets, so that
// an upstream that keeps changing its tools cannot grow porthole's memory,
// or its log and audit log, without end; and so that one kind of notice
// cannot crowd out another (junk tool names cannot use up the budget of
// audited definition changes). Past a budget, one warning is logged and
// later notices of that kind are dropped; the tools stay withheld.
type noticeKind int

const (
	noticeNamed   noticeKind = iota // a roster tool withheld, per reason
	noticeUnnamed                   // a tool the roster does not name
	noticeChanged                   // a new definition of a pinned tool, audited
)

var noticeBudget = [...]int{noticeNamed: 4096, noticeUnnamed: 256, noticeChanged: 1024}

// notice runs f once per kind and key for the life of the process, within
// the kind's budget.
func (u *Upstream) notice(kind noticeKind, key string, f func()) {
	u.mu.Lock()
	seen := u.noticed[kind]
	if seen == nil {
		seen = map[string]bool{}
		u.noticed[kind] = seen
	}
	done := seen[key]
	full := !done && len(seen) >= noticeBudget[kind]
	warn := full && !u.noticedFull[kind]
	switch {
	case full:
		u.noticedFull[kind] = true
	case !done:
		seen[key] = true
	}
	u.mu.Unlock()
	switch {
	case warn:
		u.log.Warn("upstream keeps changing its tools; further notices of this kind are not logged or audited", zap.Int("budget", noticeBudget[kind]))
	case !done && !full:
		f()
	}
}

// served is the definition porthole serves for an upstream tool: the served
// name, the reviewed title, description and input schema, and porthole's
// read-only annotations. The upstream's output schema is not served: the
// result porthole serves is its own shape.
func served(upstream string, t *mcp.Tool, digest string) (*Tool, error) {
	schema, b, ok := objectSchema(t)
	if !ok {
		return nil, errors.New(notObjectSchema)
	}
	args := map[string]bool{}
	if props, ok := schema["properties"].(map[string]any); ok {
		for name := range props {
			args[name] = true
		}
	}
	f := false
	def := &mcp.Tool{
		// The schema goes on as the JSON it was read as: the go-sdk only
		// writes it out, on every tools/list.
		Name: ServedName(upstream, t.Name), Title: t.Title, Description: t.Description, InputSchema: json.RawMessage(b),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &f, OpenWorldHint: t.Annotations.OpenWorldHint},
	}
	return &Tool{Upstream: upstream, Name: t.Name, Digest: digest, Def: def, Arguments: args}, nil
}

func sameTools(a, b map[string]*Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for name, t := range a {
		if o, ok := b[name]; !ok || o.Digest != t.Digest {
			return false
		}
	}
	return true
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
