package api

import "github.com/danielgtaylor/huma/v2"

// Access is who may call an operation, declared by registering it on the
// group [WithAccess] returns; its security, errors and budgets follow.
type Access string

const (
	// Probe: anyone, and never rate limited (health and readiness).
	Probe Access = "probe"
	// Public: anyone; each client address has the ip budget.
	Public Access = "public"
	// Caller: a logged-in session or an API key.
	Caller Access = "caller"
	// Session: a logged-in session only; an API key gets 403.
	Session Access = "session"
	// Admin: a user with the admin role, by session or API key.
	Admin Access = "admin"
)

// WithAccess returns a group of api whose operations declare access a.
func WithAccess(api huma.API, a Access) huma.API {
	g := huma.NewGroup(api)
	g.UseSimpleModifier(func(op *huma.Operation) {
		declare(op, func(d *Declaration) { d.Access = a })
	})
	return g
}
