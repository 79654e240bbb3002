package streams

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
)

// The names of the stream plane's caps: each caller's, and each user's.
const (
	capName     = "streams"
	userCapName = "streams-per-user"
)

// declared is a stream operation's event types and its messages' schema.
type declared struct {
	reg    huma.Registry
	schema *huma.Schema // the component the response's x-events refers to
	events []EventType
	names  map[string]bool
}

func (d *declared) declare(events ...EventType) {
	d.events = append(d.events, events...)
	for _, e := range events {
		d.names[e.Name] = true
	}
	d.schema.OneOf = eventSchemas(d.reg, d.events)
}

// add declares so's GET and HEAD in the spec and mounts them.
func (p *Runtime) add(so Operation) *declared {
	s := p.s
	op := so.Operation
	op.Method = http.MethodGet
	op.Metadata = nil // a stream's declaration is its Operation's
	op = api.WithDeclaration(op, api.Declaration{Access: cmp.Or(so.Access, api.Caller), Draws: []string{api.StreamOpensBudget, api.StreamUserOpensBudget},
		Caps: []api.ConcurrencyCap{{Plane: "stream", Policy: capName, Concurrent: p.cfg.Cap.capacity()},
			{Plane: "stream", Policy: userCapName, Concurrent: p.cfg.UserCap.capacity()}}})
	op.Parameters = append(op.Parameters, &huma.Param{
		Name: "Last-Event-ID", In: "header", Description: "The id of the last event received: the stream resumes after it. Browsers send it on reconnect.",
		Schema: &huma.Schema{Type: huma.TypeString, MaxLength: new(maxIDLen), Pattern: lastEventID.String(), Examples: []any{"1778751012345-0"}},
	})
	d := &declared{reg: s.API.OpenAPI().Components.Schemas, names: map[string]bool{}}
	d.schema = &huma.Schema{
		Title:       "Server-Sent Events of " + op.OperationID,
		Description: "One message of the stream, as UTF-8 text in the SSE format: one of these events.",
	}
	d.declare(append(slices.Clone(so.Events), closingEvent)...)
	name := schemaName(op.OperationID)
	if d.reg.Map()[name] != nil {
		reg := registryOf(s)
		reg.errs = append(reg.errs, fmt.Errorf("streams: the schema of %s's messages is named %s, as another schema is: rename the operation or the type", op.OperationID, name))
	} else {
		d.reg.Map()[name] = d.schema
	}
	responses := op.Responses
	head := op // HEAD, as HTTP has it wherever GET is: declared, since it passes admission
	op.Responses = map[string]*huma.Response{"200": {
		Description: "The stream: text/event-stream, one event per message, until the client leaves or the server closes it (after a stream.closing event). A comment line (`:`) comes every heartbeat. " +
			"The schema is text, which is what a validator reads; x-events names the schema of each message, and the generated client types it (docs/streams.md).",
		Content: map[string]*huma.MediaType{"text/event-stream": {
			Schema:     &huma.Schema{Type: huma.TypeString, Description: "Server-Sent Events, as UTF-8 text; each message is one of x-events."},
			Extensions: map[string]any{"x-events": map[string]any{"$ref": "#/components/schemas/" + name}},
		}},
	}}
	head.Method, head.OperationID, head.Summary = http.MethodHead, "head-"+op.OperationID, "Check: "+op.Summary
	head.Description = "The answer GET would start with, headers only, and no stream: the same checks, refusals and statuses, and it draws an open from the open budgets as a GET does. " +
		"A client may ask it to learn whether a stream would start, without holding one."
	head.Responses = map[string]*huma.Response{"200": {Description: "A GET would start the stream now."}}
	maps.Copy(op.Responses, responses) // such as a 204
	maps.Copy(head.Responses, responses)
	s.API.OpenAPI().AddOperation(&op)
	s.API.OpenAPI().AddOperation(&head)
	s.Router().Get(op.Path, func(w http.ResponseWriter, r *http.Request) {
		st, ok := p.open(&op, w, r)
		if !ok {
			return
		}
		st.head = r.Method == http.MethodHead
		st.declared = d.names
		st.serve(so.Serve)
	})
	return d
}

// eventSchemas are the schemas of a stream's messages, sorted by title:
// objects of the event's name, data, id and retry, as generated clients type SSE.
func eventSchemas(reg huma.Registry, events []EventType) []*huma.Schema {
	var one []*huma.Schema
	for _, e := range events {
		one = append(one, &huma.Schema{
			Title: "Event " + e.Name, Type: huma.TypeObject, Description: e.Doc,
			Properties: map[string]*huma.Schema{
				"event": {Type: huma.TypeString, Enum: []any{e.Name}, Description: "The event's name."},
				"data":  reg.Schema(reflect.TypeOf(e.Data), true, e.Name),
				"id":    {Type: huma.TypeString, Examples: []any{"1778751012345-0"}, Description: "The event's id, for Last-Event-ID. stream.closing has none; stream.gap has one when it marks a place in the events (an outage's)."},
				"retry": {Type: huma.TypeInteger, Examples: []any{retry.Milliseconds()}, Minimum: new(0.0), Maximum: new(float64(time.Hour / time.Millisecond)), Description: "The reconnection delay, in milliseconds, a client should wait (SSE's retry field). " + product.Name + " sends it once, first, alone (retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "): a message without data, which EventSource takes as the delay and dispatches no event for."},
			},
			Required: []string{"event", "data"},
		})
	}
	slices.SortFunc(one, func(a, b *huma.Schema) int { return strings.Compare(a.Title, b.Title) })
	return one
}

// schemaName is the component name of a stream's messages: FollowEventsEvent, say.
func schemaName(operationID string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(operationID, func(r rune) bool { return r == '-' || r == '/' || r == '{' || r == '}' }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String() + "Event"
}
