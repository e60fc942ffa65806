package redislimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/porthole-dev/porthole/gateway/tlsclient"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/porthole-dev/porthole/gateway/limit"
)

// Options configure a Store.
type Options struct {
	// URL is redis://[user:password@]host:port[/db], or rediss:// for TLS.
	URL string
	// Prefix starts every key (PORTHOLE_REDIS_KEY_PREFIX).
	Prefix string
	// Limits are the rate limits, as every replica must configure them.
	Limits limit.Limits
	// FailedAuthBurst failed authentications per address, then one per
	// FailedAuthEvery.
	FailedAuthBurst int
	FailedAuthEvery time.Duration
	// Timeout bounds dialling and each command (limit.Shared bounds each
	// question too).
	Timeout time.Duration
}

// Store is the shared state. It is safe for concurrent use.
type Store struct {
	rdb    *redis.Client
	o      Options
	global string
	probe  string // the key Probe writes
}

// MaxPrefixBytes caps PORTHOLE_REDIS_KEY_PREFIX.
const MaxPrefixBytes = 128

// CheckPrefix refuses a prefix that is empty, too long, or holds a brace
// (it would move the hash tag), a space or a control character.
func CheckPrefix(p string) error {
	if p == "" || len(p) > MaxPrefixBytes {
		return fmt.Errorf("the Redis key prefix must be 1 to %d bytes", MaxPrefixBytes)
	}
	for _, r := range p {
		if r == '{' || r == '}' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("the Redis key prefix %q holds %q: braces, spaces and control characters are refused", p, r)
		}
	}
	return nil
}

// New checks the options and makes a Store. It does not connect: the
// first question does (Ping to check at start).
func New(o Options) (*Store, error) {
	if err := CheckPrefix(o.Prefix); err != nil {
		return nil, err
	}
	if err := o.Limits.Check(); err != nil {
		return nil, err
	}
	if o.FailedAuthBurst < 1 || o.FailedAuthEvery <= 0 {
		return nil, fmt.Errorf("the failed-authentication limit (burst %d, one per %v) must have a burst of at least 1 and a positive interval", o.FailedAuthBurst, o.FailedAuthEvery)
	}
	if o.Timeout <= 0 {
		o.Timeout = 50 * time.Millisecond
	}
	opt, err := redis.ParseURL(o.URL)
	if err != nil {
		// The URL may hold a password: the error names the scheme only.
		return nil, fmt.Errorf("the Redis URL does not parse (it must be redis:// or rediss://host:port, with an optional user, password and database): %s", urlShape(o.URL))
	}
	if opt.TLSConfig != nil && opt.TLSConfig.InsecureSkipVerify {
		// Security: go-redis honours skip_verify=true in a rediss:// URL,
		// which would send the password, and take the limits' state,
		// from whoever answers at that address.
		return nil, errors.New("the Redis URL turns off the check of Redis's certificate (skip_verify): porthole refuses it; give Redis a certificate the system's roots vouch for")
	}
	if opt.TLSConfig != nil {
		tlsclient.Restrict(opt.TLSConfig)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = o.Timeout, o.Timeout, o.Timeout, o.Timeout
	// A failed command is not retried: limit.Shared decides what a failure
	// means, within one timeout.
	opt.MaxRetries = -1
	opt.DialerRetries = 1
	opt.ContextTimeoutEnabled = true
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.MinIdleConns = 2
	// go-redis logs dial failures to stderr in its own format, naming
	// the address; porthole's operations log says what failed, once per
	// outage (limit.Shared's observers).
	silenceOnce.Do(func() { redis.SetLogger(silent{}) })
	return &Store{rdb: redis.NewClient(opt), o: o, global: "{" + o.Prefix + "}:g", probe: "{" + o.Prefix + "}:probe"}, nil
}

var silenceOnce sync.Once

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

// urlShape is what an error may say of a Redis URL: its scheme, never its
// user or password.
func urlShape(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "it has no scheme"
	}
	return "its scheme is " + fmt.Sprintf("%q", u.Scheme)
}

// Password is the password of a Redis URL, or "": the redactor is told it.
func Password(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// Close closes the connections.
func (s *Store) Close() error { return s.rdb.Close() }

// Probe asks whether Redis answers a question that writes, as a charge
// does: the failure script records a failure of a probe key that is full
// again within a millisecond. A Redis that answers PING but refuses
// writes (a read-only replica after a failover, a full Redis with
// noeviction) or scripts does not pass (the breaker
// closed on PING and opened again on the next calls, over and over).
func (s *Store) Probe(ctx context.Context) error {
	_, err := failureScript.Run(ctx, s.rdb, []string{s.probe}, "take", 1, 1000).Int64()
	return quiet(err)
}

// quiet turns go-redis's errors into porthole's sentences, naming no URL.
func quiet(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("no answer from Redis in time")
	case errors.Is(err, context.Canceled):
		return err
	}
	msg := err.Error()
	if i := strings.Index(msg, "://"); i >= 0 {
		msg = msg[:i] + "://…"
	}
	return fmt.Errorf("redis: %s", msg)
}

// key is the key of a principal ("p"), an address ("f") or a vouched
// token's digest ("v"): a hash, never
// the name.
func (s *Store) key(kind, name string) string {
	h := sha256.Sum256([]byte(s.o.Prefix + "\x00" + kind + "\x00" + name))
	return "{" + s.o.Prefix + "}:" + kind + ":" + hex.EncodeToString(h[:16])
}

// micros is an interval in whole microseconds, at least 1.
func micros(d float64) int64 { return max(1, int64(d)) }

// chargeScript charges KEYS[1] (a principal's bucket) and, when given,
// KEYS[2] (the global bucket) ARGV[1] units, both or neither. ARGV[2] and
// ARGV[3] are the principal's emission interval (µs per unit) and burst,
// ARGV[4] and ARGV[5] the global's. It answers {0, 0} when charged, or
// {1 or 2 (the principal's or the global limit), µs to wait, -1 for
// never: the cost is over the burst}.
var chargeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local function after(key, emission, burst)
  local v = redis.call('GET', key)
  local tat = now
  if v then tat = math.max(tonumber(v), now) end
  local new = tat + emission * cost
  return new, new - emission * burst - now
end
local function store(key, new)
  redis.call('SET', key, string.format('%d', new), 'PX', math.floor((new - now) / 1000) + 1)
end
if cost > tonumber(ARGV[3]) then return {1, -1} end
local pnew, pwait = after(KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
if pwait > 0 then return {1, pwait} end
if #KEYS > 1 then
  if cost > tonumber(ARGV[5]) then return {2, -1} end
  local gnew, gwait = after(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]))
  if gwait > 0 then return {2, gwait} end
  store(KEYS[2], gnew)
end
store(KEYS[1], pnew)
return {0, 0}
`)

// failureScript is an address's failed-authentication count: ARGV[1]
// "take" records a failure (when one is left, as the local limiter does),
// "peek" only asks; ARGV[2] and ARGV[3] are the emission interval (µs) and
// burst. It answers 0 when a failure is left, else the µs to wait.
var failureScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission, burst = tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('GET', KEYS[1])
local tat = now
if v then tat = math.max(tonumber(v), now) end
local new = tat + emission
local wait = new - emission * burst - now
if wait > 0 then return wait end
if ARGV[1] == 'take' then
  redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.floor((new - now) / 1000) + 1)
end
return 0
`)

// Charge takes cost units from the principal's bucket and, for calls that
// reach Temporal, from the global bucket: both or neither, in one round
// trip.
func (s *Store) Charge(ctx context.Context, principal string, cost int, reachesTemporal bool) (*limit.Refusal, error) {
	l := s.o.Limits
	keys := []string{s.key("p", principal)}
	if reachesTemporal {
		keys = append(keys, s.global)
	}
	res, err := chargeScript.Run(ctx, s.rdb, keys, cost,
		micros(1e6/l.PerPrincipal), l.PerPrincipalBurst, micros(1e6/l.Global), l.GlobalBurst).Int64Slice()
	if err != nil {
		return nil, quiet(err)
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("redis: the charge script answered %d values, not 2", len(res))
	}
	if res[0] == 0 {
		return nil, nil
	}
	ref := &limit.Refusal{Limit: "principal", After: time.Duration(res[1]) * time.Microsecond}
	if res[0] == 2 {
		ref.Limit = "global"
	}
	if res[1] < 0 {
		ref.After = time.Hour
	}
	return ref, nil
}

// Blocked reports whether addr has used up its failures, and for how long.
func (s *Store) Blocked(ctx context.Context, addr string) (bool, time.Duration, error) {
	wait, err := s.failures(ctx, "peek", addr)
	return wait > 0, wait, err
}

// Failed records one failed authentication from addr.
func (s *Store) Failed(ctx context.Context, addr string) error {
	_, err := s.failures(ctx, "take", addr)
	return err
}

// Vouch records for d that the network vouched for the token of digest:
// a key of its own kind ("v"), a hash of the digest like every key.
func (s *Store) Vouch(ctx context.Context, digest string, d time.Duration) error {
	return quiet(s.rdb.Set(ctx, s.key("v", digest), "1", d).Err())
}

// Vouched reports whether a replica vouched for the token of digest
// within the time it gave.
func (s *Store) Vouched(ctx context.Context, digest string) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.key("v", digest)).Result()
	return n == 1, quiet(err)
}

func (s *Store) failures(ctx context.Context, op, addr string) (time.Duration, error) {
	wait, err := failureScript.Run(ctx, s.rdb, []string{s.key("f", addr)}, op,
		micros(float64(s.o.FailedAuthEvery.Microseconds())), s.o.FailedAuthBurst).Int64()
	if err != nil {
		return 0, quiet(err)
	}
	return time.Duration(wait) * time.Microsecond, nil
}

// PlaintextHost is the host of a redis:// URL (no TLS), and whether the URL
// is one; a rediss:// URL, or one that does not parse, is not.
func PlaintextHost(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "redis" {
		return "", false
	}
	return u.Hostname(), true
}
