package api

import (
	"context"
	"io"

	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
)

// A deferredCharge is the huma context of a request whose handler decides
// when it is charged to its plane, so a refusal before consumes no budget.
// A request the handler never settles is charged as its response starts,
// and a refusal then replaces the response.
type deferredCharge struct {
	humaContext
	ctx      context.Context
	ps       *planes
	p        *budgetLimiter
	key      string
	settled  bool
	refusal  *Error
	replaced bool // the refusal was written; what huma writes next is dropped
}

type deferredKey struct{}

// humaContext names the embedded huma.Context.
type humaContext = huma.Context

// Context is the request's context, carrying c for ChargeNow.
func (c *deferredCharge) Context() context.Context { return c.ctx }

// Unwrap lets humachi.Unwrap reach the response writer.
func (c *deferredCharge) Unwrap() huma.Context { return c.humaContext }

// SetStatus starts the response, then sets its status unless refused.
func (c *deferredCharge) SetStatus(code int) {
	if c.start() {
		c.humaContext.SetStatus(code)
	}
}

// start runs as the response starts: it charges a request not settled,
// writes a refusal in place of the response, and reports whether the
// response is still the handler's.
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

// BodyWriter starts the response; it discards the body of a refused one.
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
// defers its charge, and returns the refusal (429 or 503) for the handler
// to return; nil in any other operation.
func ChargeNow(ctx context.Context) error {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		if e := c.settle(true); e != nil {
			return e
		}
	}
	return nil
}

// SkipCharge settles a deferred charge without charging, for a handler
// that refuses the request itself; a later ChargeNow charges nothing.
func SkipCharge(ctx context.Context) {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		c.settle(false)
	}
}

// LoginBackedOff is the 429 (scope and policy login) of a password attempt
// the login back-off refused, counted and logged like every refusal in an
// operation that declares [WithLoginBackoff]. Return it after [SkipCharge].
func LoginBackedOff(ctx context.Context, te *auth.ThrottledError) *Error {
	e := RateLimited("login", "login", te.Failures, 0, te.RetryAfter)
	if r, ok := ctx.Value(refusalsKey{}).(*refusals); ok {
		r.observe(ctx, e, nil)
	}
	return e
}
