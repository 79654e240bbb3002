package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
)

// A Plane is the stream endpoints of one server: its caps, open budgets
// and hub, and the streams open on this replica. Make one with [New],
// serve it with its [Plane.Feature], and end its streams with
// [Plane.CloseStreams] when the server shuts down.
type Plane struct {
	cfg Config
	// s is the server the plane serves, and d its door, once Feature ran.
	s *api.Server
	d *door
	// opens are the open budgets (none when the server's limits are off);
	// headers writes what the caps and budgets decided; keyCount and
	// userCount count the caps' decisions.
	opens               []*api.PlaneBudget
	headers             *ratelimit.CapHeaders
	keyCount, userCount api.Decisions
	closing             chan struct{} // closed by CloseStreams
	once                sync.Once
	live                liveSnapshots
	// prober carries probes to every replica.
	prober prober
	// n counts the streams open on this replica, byUser holds them by user;
	// ended is closed when n falls to 0; probing holds the users whose streams
	// are probed, each with the channel closed when the probe's wait is over.
	mu      sync.Mutex
	n       int
	byUser  map[string][]*Stream
	ended   chan struct{}
	probing map[string]chan struct{}
}

// New returns the stream plane of cfg, with its defaults.
func New(cfg Config) *Plane {
	return &Plane{cfg: cfg.withDefaults(), closing: make(chan struct{}), byUser: map[string][]*Stream{}, probing: map[string]chan struct{}{}}
}

// Feature serves the plane on s, as an api.Feature: it declares
// GET /api/v1/events and GET /api/v1/system/live, and serves the streams
// the features add before or after it. Put it last, so the spec lists the
// features' tags before Streams. A plane serves one server.
func (p *Plane) Feature(s *api.Server) {
	d := doorOf(s)
	switch {
	case d.plane != nil:
		d.errs = append(d.errs, errors.New("streams: two stream planes are given to one server: list one plane's Feature in api.Config.Features"))
		return
	case p.s != nil:
		d.errs = append(d.errs, errors.New("streams: a plane serves one server, and this one serves another already: make a plane with streams.New for each server"))
		return
	}
	p.s, p.d, d.plane = s, d, p
	if user, caller := p.cfg.UserCap.capacity(), p.cfg.Cap.capacity(); user < caller {
		d.errs = append(d.errs, fmt.Errorf("the streams of a user are capped at %d, fewer than the %d of each of its sessions and keys: the user's cap counts them all, so it must be at least theirs", user, caller))
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
	for _, op := range d.pending {
		p.add(op)
	}
	d.pending = nil
	p.addPlatform()
}

// Hub is the hub the plane's streams follow, where a feature publishes
// its users' events ([Publish]).
func (p *Plane) Hub() Hub { return p.cfg.Hub }

// CloseStreams makes every open stream send stream.closing and end, and
// waits until they have, or ctx is done. Call it when a shutdown starts:
// a stream that took its connection is not http.Server's to wait for.
func (p *Plane) CloseStreams(ctx context.Context) error {
	p.once.Do(func() { close(p.closing) })
	select {
	case <-p.none():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Plane) enter(st *Stream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	user := st.caller.User.ID
	p.byUser[user] = append(p.byUser[user], st)
}

func (p *Plane) leave(st *Stream) {
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

func (p *Plane) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// none returns a channel closed once no stream is open.
func (p *Plane) none() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if p.ended == nil {
		p.ended = make(chan struct{})
	}
	return p.ended
}

// Config configures a stream plane ([New]); zero fields take defaults.
type Config struct {
	// Cap bounds each caller's open streams (a session's, an API key's)
	// across every stream endpoint: default NewMemoryCap(DefaultCap).
	Cap Cap
	// UserCap bounds each user's open streams, across all its sessions and
	// keys: default NewMemoryCap(DefaultUserCap). Its max must be at least
	// Cap's.
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

// The stream plane's defaults.
const (
	DefaultCap        = 16
	DefaultUserCap    = 64
	DefaultHeartbeat  = 15 * time.Second
	DefaultRetryAfter = 5 * time.Second
	// The default in-memory hub's replay and per-subscription buffer.
	defaultReplay = 1024
	defaultBuffer = 64
	// retry is the reconnection delay a stream asks clients for.
	retry = 3 * time.Second
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
	if c.LiveAccess == "" {
		c.LiveAccess = api.Caller
	}
	return c
}
