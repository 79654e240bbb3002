package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
)

// A Runtime is the stream endpoints of one server: its caps, open budgets,
// hub, and the streams open on this replica. Make one with [New], serve it
// with [Runtime.Feature] (which starts its live snapshots, one a second),
// and end its streams and snapshots with [Runtime.CloseStreams].
type Runtime struct {
	cfg Config
	s   *api.Server // once Feature ran
	reg *registry
	// opens are the open budgets (none when the server's limits are off);
	// headers writes what the caps and budgets decided.
	opens               []*api.PlaneBudget
	headers             *ratelimit.CapHeaders
	keyCount, userCount api.Decisions
	closing             chan struct{} // closed by CloseStreams
	once                sync.Once
	live                liveSnapshots
	prober              prober             // carries probes to every replica
	probing             singleflight.Group // each probed user's wait
	// n counts the streams open here, byUser holds them; ended is closed
	// when n falls to 0.
	mu     sync.Mutex
	n      int
	byUser map[string][]*Stream
	ended  chan struct{}
}

// New returns the stream runtime of cfg, with its defaults.
func New(cfg Config) *Runtime {
	return &Runtime{cfg: cfg.withDefaults(), closing: make(chan struct{}), byUser: map[string][]*Stream{}}
}

// Feature serves the runtime on s, as an api.Feature: it declares
// GET /api/v1/events and GET /api/v1/system/live, and serves the streams
// the features add before or after it. Put it last, so the spec lists the
// features' tags before Streams.
func (p *Runtime) Feature(s *api.Server) {
	reg := registryOf(s)
	switch {
	case reg.rt != nil:
		reg.errs = append(reg.errs, errors.New("streams: two streams runtimes are given to one server: list one runtime's Feature in api.Config.Features"))
		return
	case p.s != nil:
		reg.errs = append(reg.errs, errors.New("streams: a runtime serves one server, and this one serves another already: make one with streams.New for each server"))
		return
	}
	p.s, p.reg, reg.rt = s, reg, p
	if user, caller := p.cfg.UserCap.capacity(), p.cfg.Cap.capacity(); user < caller {
		reg.errs = append(reg.errs, fmt.Errorf("the streams of a user are capped at %d, fewer than the %d of each of its sessions and keys: the user's cap counts them all, so it must be at least theirs", user, caller))
	}
	var budgets []ratelimit.Budget
	for _, name := range []string{api.StreamOpensBudget, api.StreamUserOpensBudget} {
		if b := s.PlaneBudget(name); b != nil {
			p.opens, budgets = append(p.opens, b), append(budgets, b.Budget())
		}
	}
	p.headers = ratelimit.NewCapHeaders(budgets, p.cfg.RetryAfter,
		ratelimit.Concurrency{Name: capName, Capacity: p.cfg.Cap.capacity()},
		ratelimit.Concurrency{Name: userCapName, Capacity: p.cfg.UserCap.capacity()})
	m := s.Metrics()
	p.keyCount, p.userCount = m.Decisions("stream", capName), m.Decisions("stream", userCapName)
	if h, ok := p.cfg.Hub.(prober); ok {
		p.prober = h
		h.onProbe(p.poke)
	}
	if m != nil {
		m.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: product.MetricNamespace + "_streams_open", Help: "Streams open on this replica.",
		}, func() float64 { return float64(p.count()) }))
	}
	for _, op := range reg.pending {
		p.add(op)
	}
	reg.pending = nil
	p.addPlatform()
	go p.record(api.WithLogger(context.Background(), s.Logger()))
}

// Hub is the hub the runtime's streams follow, where features [Publish] events.
func (p *Runtime) Hub() Hub { return p.cfg.Hub }

// CloseStreams stops the live snapshots, has every open stream send
// stream.closing and end, and waits until they have, or ctx is done. Call it
// at shutdown: a stream that took its connection is not http.Server's to wait for.
func (p *Runtime) CloseStreams(ctx context.Context) error {
	p.once.Do(func() { close(p.closing) })
	p.mu.Lock()
	if p.n > 0 && p.ended == nil {
		p.ended = make(chan struct{})
	}
	ended := p.ended // nil when none is open
	p.mu.Unlock()
	if ended == nil {
		return nil
	}
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Runtime) enter(st *Stream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	user := st.caller.User.ID
	p.byUser[user] = append(p.byUser[user], st)
}

func (p *Runtime) leave(st *Stream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	user := st.caller.User.ID
	if p.byUser[user] = slices.DeleteFunc(p.byUser[user], func(s *Stream) bool { return s == st }); len(p.byUser[user]) == 0 {
		delete(p.byUser, user)
	}
	if p.n--; p.n == 0 && p.ended != nil {
		close(p.ended)
		p.ended = nil
	}
}

func (p *Runtime) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// Config configures a stream runtime ([New]); zero fields take defaults.
type Config struct {
	// Cap bounds each caller's open streams (a session's, an API key's)
	// across every stream endpoint: default NewMemoryCap(DefaultCap).
	Cap Cap
	// UserCap bounds each user's open streams, across all its sessions and
	// keys (at least Cap's max): default NewMemoryCap(DefaultUserCap).
	UserCap Cap
	// Hub carries the callers' events: default an in-memory hub.
	Hub Hub
	// Heartbeat is how often an idle stream gets a comment line, which keeps
	// proxies from closing it, finds dead clients and renews its slots.
	Heartbeat time.Duration
	// RetryAfter is the Retry-After of a 429 of the caps.
	RetryAfter time.Duration
	// LiveAccess is who may follow GET /api/v1/system/live: api.Caller (the
	// default) or api.Admin.
	LiveAccess api.Access
}

// The stream runtime's defaults.
const (
	DefaultCap        = 16
	DefaultUserCap    = 64
	DefaultHeartbeat  = 15 * time.Second
	DefaultRetryAfter = 5 * time.Second
	defaultReplay     = 1024            // the default hub's replay
	defaultBuffer     = 64              // and per-subscription buffer
	retry             = 3 * time.Second // the reconnection delay a stream asks clients for
)

func (c Config) withDefaults() Config {
	if c.Cap == nil {
		c.Cap = NewMemoryCap(DefaultCap)
	}
	if c.UserCap == nil {
		c.UserCap = NewMemoryCap(DefaultUserCap)
	}
	if c.Hub == nil {
		c.Hub = NewMemoryHub(defaultReplay, defaultBuffer)
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	c.LiveAccess = cmp.Or(c.LiveAccess, api.Caller)
	return c
}
