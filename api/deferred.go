package api

import (
	"context"
	"io"

	"github.com/brain-template/brain/auth"
	"github.com/danielgtaylor/huma/v2"
)

// A deferredCharge is the huma context of a request whose handler decides
// when it is charged, so an earlier refusal costs no budget. One never
// settled is charged as its response starts, and a refusal replaces it.
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

type humaContext = huma.Context

func (c *deferredCharge) Context() context.Context { return c.ctx }

func (c *deferredCharge) Unwrap() huma.Context { return c.humaContext }

func (c *deferredCharge) SetStatus(code int) {
	if c.start() {
		c.humaContext.SetStatus(code)
	}
}

// start charges a request not settled, writes a refusal in place of the
// response, and reports whether the response is still the handler's.
func (c *deferredCharge) start() bool {
	if !c.replaced && c.settle(true) != nil {
		writeHumaError(c.ps.api, c.humaContext, c.refusal)
		c.replaced = true
	}
	return !c.replaced
}

func (c *deferredCharge) SetHeader(name, value string) {
	if !c.replaced {
		c.humaContext.SetHeader(name, value)
	}
}

func (c *deferredCharge) AppendHeader(name, value string) {
	if !c.replaced {
		c.humaContext.AppendHeader(name, value)
	}
}

func (c *deferredCharge) BodyWriter() io.Writer {
	if !c.start() {
		return io.Discard
	}
	return c.humaContext.BodyWriter()
}

// settle charges the request once (when charge is true) and returns the refusal.
func (c *deferredCharge) settle(charge bool) *Error {
	if !c.settled {
		c.settled = true
		if charge {
			c.refusal = c.ps.admit(c, c.p, c.key)
		}
	}
	return c.refusal
}

// ChargeNow charges a deferred request now, and returns the refusal for
// the handler to return; nil in any other operation.
func ChargeNow(ctx context.Context) error {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		if e := c.settle(true); e != nil {
			return e
		}
	}
	return nil
}

// SkipCharge settles a deferred charge without charging, for a handler
// that refuses the request itself.
func SkipCharge(ctx context.Context) {
	if c, ok := ctx.Value(deferredKey{}).(*deferredCharge); ok {
		c.settle(false)
	}
}

// LoginBackedOff is the 429 of a password attempt the login back-off
// refused, counted and logged. Return it after [SkipCharge].
func LoginBackedOff(ctx context.Context, te *auth.ThrottledError) *Error {
	e := RateLimited("login", "login", te.Failures, 0, te.RetryAfter)
	if r, ok := ctx.Value(refusalsKey{}).(*refusals); ok {
		r.observe(ctx, e, nil)
	}
	return e
}
