package temporaltest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy forwards TCP to a target and can hold every chunk coming back
// for a while: a Temporal that answers slowly, for tests of timeouts.
type DelayProxy struct {
	Addr  string
	delay atomic.Int64
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// StartDelayProxy listens on a free loopback port and forwards to target.
func StartDelayProxy(target string) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{Addr: ln.Addr().String(), ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(up, c); up.Close() }()
			go func() { defer p.wg.Done(); p.copyDelayed(c, up); c.Close() }()
		}
	}()
	return p, nil
}

func (p *DelayProxy) copyDelayed(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// SetDelay holds each chunk from the target for d (0: none).
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops the proxy and every connection through it.
func (p *DelayProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
