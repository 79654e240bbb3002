package streams

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/ratelimit"
)

var lastEventID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// open is every stream's admission, before a byte of its response: the
// caller (401, 403, 503), the stream's places (429 with scope stream, or
// 503), then its Last-Event-ID (422). It reports whether the stream may start.
func (p *Runtime) open(op *huma.Operation, w http.ResponseWriter, r *http.Request) (*Stream, bool) {
	id := p.s.RequireCaller(humachi.NewContext(op, r, w))
	if id == nil {
		return nil, false // answered
	}
	r = r.WithContext(auth.NewContext(r.Context(), id))
	// A malformed Last-Event-ID is refused after the limits, as parameters are.
	var malformed *api.Error
	after := r.Header.Get("Last-Event-ID")
	if after != "" && !lastEventID.MatchString(after) {
		malformed = api.NewError(http.StatusUnprocessableEntity, "", api.FieldError{Location: "header.Last-Event-ID", Message: "not an event id of this API: <digits>-<digits>, as an event's id: field"})
	}
	slot, userSlot, e := p.admit(r.Context(), w.Header(), id, malformed)
	if e != nil {
		p.s.Refuse(w, r, e)
		return nil, false
	}
	// The stream's context ends with the request's until the stream has its
	// connection (unfollow), then outlives the handler.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	if rc := chi.RouteContext(ctx); rc != nil { // chi reuses its own once the handler returns
		var own *chi.Context // none for a stream without path parameters
		if len(rc.URLParams.Keys) > 0 {
			own = chi.NewRouteContext()
			own.URLParams.Keys, own.URLParams.Values = slices.Clone(rc.URLParams.Keys), slices.Clone(rc.URLParams.Values)
			own.RoutePatterns = slices.Clone(rc.RoutePatterns)
		}
		ctx = context.WithValue(ctx, chi.RouteCtxKey, own)
	}
	st := &Stream{rt: p, slot: slot, userSlot: userSlot, w: w, c: newSSEConn(w, p.cfg.Heartbeat), r: r.WithContext(ctx), cancel: cancel,
		caller: id, lastEventID: after, lastSent: after, opened: p.s.Now(), probe: make(chan struct{}, 1)}
	st.unfollow = context.AfterFunc(r.Context(), cancel)
	p.enter(st)
	return st, true
}

// admit takes a slot of the caller's cap and its user's, then an open of
// each budget, and writes the stream plane's headers. On a refusal (429,
// or 503 when a store fails), or when then is not nil, it gives back what
// it took and returns that error.
func (p *Runtime) admit(ctx context.Context, h http.Header, id *auth.Identity, then *api.Error) (slot, userSlot capSlot, e *api.Error) {
	caps := [2]struct {
		c         Cap
		key, name string
		count     api.Decisions
	}{{p.cfg.Cap, capKey(id), capName, p.keyCount}, {p.cfg.UserCap, "u:" + id.User.ID, userCapName, p.userCount}}
	var slots [2]capSlot
	var free [2]int // of each cap, once decided
	giveBack := func(n int) {
		for j := range n {
			slots[j].release()
			free[j]++
		}
	}
	for i, c := range caps {
		s, live, ok, err := p.reserve(ctx, c.c, c.key, id.User.ID)
		if err != nil {
			giveBack(i)
			if errors.Is(ctx.Err(), context.Canceled) { // the client left: nobody is left to answer
				return capSlot{}, capSlot{}, api.NewError(api.StatusClientClosedRequest, "")
			}
			c.count.Failed()
			p.s.LogOutage(ctx, err)
			return capSlot{}, capSlot{}, api.NewError(http.StatusServiceUnavailable, product.Name+" cannot count your streams right now; retry shortly")
		}
		if !ok {
			giveBack(i)
			c.count.Limited()
			p.headers.Write(h, free[:i+1], nil, p.s.Now()) // none free in c
			return capSlot{}, capSlot{}, api.RateLimited("stream", c.name, c.c.capacity(), 0, p.cfg.RetryAfter)
		}
		free[i] = max(c.c.capacity()-live, 0)
		c.count.Allowed()
		slots[i] = s
	}

	var ds [2]ratelimit.Decision
	for i, opens := range p.opens {
		d, e := opens.Draw(ctx, caps[i].key) // the open budgets' keys are the caps'
		if e != nil {
			giveBack(2)
			for j := range i { // and every open taken
				p.opens[j].Refund(ctx, caps[j].key, &ds[j])
			}
			if e.GetStatus() == http.StatusTooManyRequests {
				ds[i] = d
				p.headers.Write(h, free[:], ds[:i+1], p.s.Now())
			}
			return capSlot{}, capSlot{}, e
		}
		ds[i] = d
	}
	if then != nil {
		giveBack(2)
		slots = [2]capSlot{}
	}
	p.headers.Write(h, free[:], ds[:len(p.opens)], p.s.Now())
	return slots[0], slots[1], then
}

// reserve takes one of key's slots in c. When key has none free, user's
// streams first prove their clients are there (probe), so a dead one frees its slot.
func (p *Runtime) reserve(ctx context.Context, c Cap, key, user string) (capSlot, int, bool, error) {
	slot, live, ok, err := c.reserve(ctx, key)
	if ok || err != nil || !p.probe(ctx, user) {
		return slot, live, ok, err
	}
	return c.reserve(ctx, key)
}

// capKey is the caller's key in the cap and the open budget.
func capKey(id *auth.Identity) string {
	if id.Method == auth.MethodSession {
		return "s:" + id.SessionHash
	}
	return "k:" + id.APIKeyID
}
