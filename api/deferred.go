package api

import (
	"context"
	"io"

	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
)

// A deferredCharge is the huma context of a request whose handler decides
// when it is charged to its plane: after the checks that must refuse
// first, so that a refused request consumes from no budget. A request that
// never reaches the handler (an invalid body) is charged as its response
// starts; if the plane refuses it then, the refusal replaces the response,
// as it would have in an operation that charges up front.
type deferredCharge struct {
	humaContext
	ctx      context.Context
	ps       *planes
	p        *plane
	key      string
	settled  bool
	refusal  *Error
	replaced bool // the refusal was written; what huma writes next is dropped
}

type deferredKey struct{}

// humaContext names the embedded huma.Context, whose Context method
// deferredCharge overrides.
type humaContext = huma.Context

// Context is the request's context, carrying c for ChargeNow.
func (c *deferredCharge) Context() context.Context { return c.ctx }

// Unwrap lets humachi.Unwrap reach the response writer.
func (c *deferredCharge) Unwrap() huma.Context { return c.humaContext }

// SetStatus starts the response (see start), then sets its status unless
// a refusal replaced it.
func (c *deferredCharge) SetStatus(code int) {
	if c.start() {
		c.humaContext.SetStatus(code)
	}
}

// start runs as the response starts (its status, or its first byte): it
// charges a request the handler did not settle, and when the request is
// refused — then, or by a ChargeNow whose refusal the handler did not
// return — writes the refusal in place of the response. It reports
// whether the response is still the handler's.
func (c *deferredCharge) start() bool {
	if !c.replaced && c.settle(true) != nil {
		writeHumaError(c.ps.api, c.humaContext, c.refusal)
		c.replaced = true
	}
	return !c.replaced
}

// SetHeader passes a header on, unless a refusal replaced the response.
func (c *deferredCharge) SetHeader(name, value string) {
	if !c.replaced {
		c.humaContext.SetHeader(name, value)
	}
}

// AppendHeader passes a header on, unless a refusal replaced the response.
func (c *deferredCharge) AppendHeader(name, value string) {
	if !c.replaced {
		c.humaContext.AppendHeader(name, value)
	}
}

// BodyWriter starts the response (see start); it discards what huma
// writes once a refusal replaced it.
func (c *deferredCharge) BodyWriter() io.Writer {
	if !c.start() {
		return io.Discard
	}
	return c.humaContext.BodyWriter()
}

// settle charges the request once (when charge is true) and returns the
// refusal, if any.
func (c *deferredCharge) settle(charge bool) *Error {
	if !c.settled {
		c.settled = true
		if charge {
			c.refusal = c.ps.admit(c, c.p, c.key)
		}
	}
	return c.refusal
}

// ChargeNow charges the request to its plane now, in an operation that
// defers its charge, and returns the refusal (429, or 503 when the
// plane's store fails under the closed policy) for the handler to return.
// It returns nil in any other operation, where the plane has decided
// before the handler.
func ChargeNow(ctx context.Context) error {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		if e := c.settle(true); e != nil {
			return e
		}
	}
	return nil
}

// SkipCharge settles a deferred charge without charging: the handler
// refuses the request itself, before the plane (login's back-off). A
// charge settles once: ChargeNow after SkipCharge charges nothing.
func SkipCharge(ctx context.Context) {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		c.settle(false)
	}
}

// LoginBackedOff is the answer to a password attempt the login back-off
// refused (te, from the auth.Backoff's Check or Begin): the one 429,
// details.scope and policy login, with Retry-After, counted and logged
// like every refusal in an operation that declares [WithLoginBackoff]. A
// handler that checks the back-off before its charge returns it after
// [SkipCharge], so that the refusal takes no token from any budget.
func LoginBackedOff(ctx context.Context, te *auth.ThrottledError) *Error {
	e := RateLimited("login", "login", te.Failures, 0, te.RetryAfter)
	if r, ok := ctx.Value(refusalsKey{}).(*refusals); ok {
		r.observe(ctx, e, nil)
	}
	return e
}
