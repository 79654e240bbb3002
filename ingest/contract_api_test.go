// The spec walk: for every operation of the served spec (the platform's
// and the example's) and every status it declares, the walk makes a
// request that gets that status, over real HTTP, and checks the answer
// against the spec: each header the spec requires on that status is
// there (with a value its schema allows), and every error is the
// envelope.

package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/streams"
)

// unprovoked are the statuses the walk does not provoke, and why: every
// other status an operation declares, it must.
var unprovoked = map[string]string{
	"408": "a body that stops arriving is refused after 5 s of wall time a request (huma's body read timeout, or the connection's minimum rate); api's and connlimit's tests cover it",
	"500": "the walk injects no fault into a handler; api's tests provoke each 500 path with operations of their own",
}

// TestSpecWalkEveryStatusCarriesWhatTheSpecDeclares walks every
// operation of the served spec on three servers: one that answers
// (2xx, 400, 401, 403, 404, 409, 413, 415, 422), one whose budgets admit
// one request an hour (429), and one whose rate-limit store and
// readiness check fail (503). A stream's malformed Last-Event-ID (422), a
// body's Content-Length over the limit (413) and its charset (415) were
// answered without the rate-limit headers the spec requires there, and
// "?limit=" with 200.
func TestSpecWalkEveryStatusCarriesWhatTheSpecDeclares(t *testing.T) {
	w := &walk{t: t, provoked: map[string]bool{}}
	w.answers()
	w.refusals()
	w.outage()
	for _, o := range w.spec.operations() {
		for status := range o.responses() {
			if !w.provoked[o.id+" "+status] && unprovoked[status] == "" {
				t.Errorf("%s %s declares %s, which the walk never provoked: add a way to, or say why it cannot", o.method, o.path, status)
			}
		}
	}
}

// A walk is the state of the spec walk: the spec it walks, the server it
// calls now, and the statuses provoked so far, by "operationId status".
type walk struct {
	t        *testing.T
	spec     walkSpec
	l        *live
	provoked map[string]bool
}

// A call is one request of the walk.
type call struct {
	status int    // the status it is to provoke
	how    string // how it does, for the messages
	path   string // with its query, "" for the operation's own
	header []string
	body   string // sent as application/json unless ctype says otherwise
	ctype  string
	// huge sends the head of a POST whose Content-Length is over any
	// limit, and no body, on a connection of its own.
	huge bool
}

// do sends c to o's operation and checks its answer against the spec.
// It returns the answer.
func (w *walk) do(o walkOp, c call) apitest.Reply {
	w.t.Helper()
	path := c.path
	if path == "" {
		path = o.concretePath()
	}
	r := w.send(o, path, c)
	where := fmt.Sprintf("%s %s (%s)", o.method, path, c.how)
	if r.Status != c.status {
		w.t.Errorf("%s: %d %.300s; want %d", where, r.Status, r.Body, c.status)
		return r
	}
	w.provoked[o.id+" "+strconv.Itoa(c.status)] = true
	for name, allowed := range w.spec.requiredHeaders(o, strconv.Itoa(c.status)) {
		if v := r.Header.Get(name); v == "" || allowed != nil && !slices.Contains(allowed, v) {
			w.t.Errorf("%s: %d with %s: %q; the spec requires it (%v)", where, r.Status, name, v, allowed)
		}
	}
	if c.status >= 400 {
		var env struct{ Code, Message string }
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			w.t.Errorf("%s: %d as %q (nosniff %q); want the envelope", where, r.Status, r.Header.Get("Content-Type"), r.Header.Get("X-Content-Type-Options"))
		} else if o.method != http.MethodHead && (json.Unmarshal([]byte(r.Body), &env) != nil || env.Message == "" ||
			env.Code != api.CodeForStatus(r.Status) && env.Code != "idempotency-key-reused") {
			w.t.Errorf("%s: %d %.300s; want the envelope", where, r.Status, r.Body)
		}
	}
	return r
}

// send sends c to path, as o's method.
func (w *walk) send(o walkOp, path string, c call) apitest.Reply {
	w.t.Helper()
	switch {
	case c.huge:
		conn, rd := w.l.OpenRequest(path, append(c.header, "Content-Length: 1099511627776"), nil)
		defer conn.Close()
		res, err := http.ReadResponse(rd, nil)
		if err != nil {
			w.t.Fatalf("%s %s (%s): %v", o.method, path, c.how, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return apitest.Reply{Status: res.StatusCode, Header: res.Header, Body: string(b)}
	case c.ctype != "":
		return w.l.Post(path, c.ctype, []byte(c.body), false, c.header...)
	case o.stream() && o.method == http.MethodGet:
		st, r := w.l.OpenStream(path, c.header...)
		if st != nil {
			st.Close()
		}
		return r
	}
	var body any
	if c.body != "" {
		body = json.RawMessage(c.body)
	}
	r, err := w.l.CallContext(context.Background(), o.method, path, body, c.header...)
	if err != nil {
		w.t.Fatalf("%s %s (%s): %v", o.method, path, c.how, err)
	}
	return r
}

// answers walks the statuses a server that answers gives: the errors
// any operation may give, each provoked the same way on every operation
// that declares it, then, in an order that makes each possible, each
// operation's successes and conflicts.
func (w *walk) answers() {
	db := apitest.OpenDB(w.t)
	svc := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: apitest.Argon2, MaxAPIKeys: 2})
	if _, err := svc.AddUser(context.Background(), apitest.User, apitest.Password); err != nil {
		w.t.Fatal(err)
	}
	hub := streams.NewMemoryHub(64, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Publish: ingest.Publisher(hub), MaxQueuedJobs: 1})
	w.l = apitest.Start(w.t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}}, apitest.Streams(streams.Config{Hub: hub}))
	w.spec = servedWalkSpec(w.t, w.l)
	ada, key := loginAndKey(w.t, svc) // one of ada's two keys
	session, apiKey := "Cookie: "+ada, "X-API-Key: "+key

	for _, o := range w.spec.operations() {
		caller := []string{session}
		if o.public() {
			caller = nil
		}
		if o.declares("400") {
			w.do(o, call{status: 400, how: "a body that is no JSON", header: caller, body: `{"project":`})
		}
		if o.declares("401") && !o.public() {
			w.do(o, call{status: 401, how: "no credentials"})
		}
		if o.declares("403") {
			if o.sessionOnly() {
				w.do(o, call{status: 403, how: "an API key", header: []string{apiKey}, body: o.someBody()})
			} else {
				w.do(o, call{status: 403, how: "a cookie, cross-site", header: []string{session, "Sec-Fetch-Site: cross-site"}, body: o.someBody()})
			}
		}
		if o.declares("404") {
			w.do(o, call{status: 404, how: "an id nobody has", header: caller})
		}
		if o.declares("413") {
			w.do(o, call{status: 413, how: "a Content-Length over the limit", header: caller, huge: true})
		}
		if o.declares("415") {
			w.do(o, call{status: 415, how: "text/plain", header: caller, body: "{}", ctype: "TEXT/PLAIN"})
			w.do(o, call{status: 415, how: "a charset not UTF-8", header: caller, body: "{}", ctype: "application/json; charset=iso-8859-1"})
		}
		if o.declares("422") {
			for _, c := range o.invalid() {
				c.header = append(c.header, caller...)
				w.do(o, c)
			}
		}
	}

	// Each success, and each conflict, once the state it needs is there.
	ok := func(id string, c call) apitest.Reply {
		w.t.Helper()
		if c.how == "" {
			c.how = "a valid request"
		}
		c.header = append(c.header, session)
		return w.do(w.spec.operation(w.t, id), c)
	}
	batch := func(text string) string { return `{"project":"walk","items":[{"text":"` + text + `"}]}` }
	w.do(w.spec.operation(w.t, "login"), call{status: 401, how: "a wrong password", body: `{"username":"ada","password":"wrong"}`})
	w.do(w.spec.operation(w.t, "login"), call{status: 200, how: "ada's password", body: `{"username":"ada","password":"` + apitest.Password + `"}`})
	for _, id := range []string{"get-health", "get-ready"} {
		w.do(w.spec.operation(w.t, id), call{status: 200, how: "a probe"})
	}
	for _, id := range []string{"get-me", "list-api-keys", "list-jobs", "list-projects", "list-skills", "follow-events", "head-follow-events", "follow-system-live", "head-follow-system-live"} {
		ok(id, call{status: 200})
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(ok("create-api-key", call{status: 201, body: `{"name":"walk"}`}).Body), &created)
	ok("create-api-key", call{status: 409, how: "a key past the cap of 2", body: `{"name":"walk"}`})
	ok("delete-api-key", call{status: 204, path: api.Prefix + "/apikeys/" + created.ID})

	var ended, queued struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal([]byte(ok("ingest-memory", call{status: 202, body: batch("ended")}).Body), &ended)
	if err := memory.Process(context.Background(), ended.JobID); err != nil {
		w.t.Fatal(err)
	}
	json.Unmarshal([]byte(ok("ingest-memory", call{status: 202, body: batch("queued")}).Body), &queued)
	ok("ingest-memory", call{status: 409, how: "a batch past the quota of 1 job queued", body: batch("one too many")})
	ok("get-job", call{status: 200, path: api.Prefix + "/jobs/" + ended.JobID})
	for _, id := range []string{"follow-job-log", "head-follow-job-log"} {
		ok(id, call{status: 204, how: "a job that ended", path: api.Prefix + "/jobs/" + ended.JobID + "/log"})
		ok(id, call{status: 200, how: "a job queued", path: api.Prefix + "/jobs/" + queued.JobID + "/log"})
	}
	var found struct{ Results []struct{ ID string } }
	json.Unmarshal([]byte(ok("query-memory", call{status: 200, path: api.Prefix + "/memory/query?q=ended"}).Body), &found)
	if len(found.Results) != 1 {
		w.t.Fatalf("the item ingested: %+v", found)
	}
	ok("delete-memory-item", call{status: 204, path: api.Prefix + "/memory/items/" + found.Results[0].ID})
	ok("logout", call{status: 204})
	token, _, _, err := svc.Login(context.Background(), apitest.User, apitest.Password, "walk") // logout ended the walk's session
	if err != nil {
		w.t.Fatal(err)
	}
	session = "Cookie: " + api.SessionCookie + "=" + token
	ok("change-password", call{status: 204, body: `{"current":"` + apitest.Password + `","new":"another horse battery"}`})
}

// refusals walks the 429s: on a server whose every budget admits one
// request an hour, the second request of a caller is refused, whatever
// it asks (the first may be refused already, by a budget an operation
// before it spent).
func (w *walk) refusals() {
	hourly := ratelimit.Rate{Limit: 1, Window: time.Hour, Burst: 1}
	limits := api.Limits{Session: hourly, IP: hourly, APIKey: hourly, StreamOpens: hourly,
		Override: func(string) ([]ratelimit.Rate, bool, error) { return []ratelimit.Rate{hourly}, true, nil }}
	w.l = exampleServer(w.t, api.Config{Limits: limits})
	ada, _ := loginAndKey(w.t, w.l.Auth)
	for _, o := range w.spec.operations() {
		if !o.declares("429") {
			continue
		}
		c := call{status: http.StatusTooManyRequests, how: "a second request", header: []string{"Cookie: " + ada}, body: o.someBody()}
		if o.public() {
			c.header = nil
		}
		w.send(o, o.concretePath(), c) // takes the token, if any is left
		w.do(o, c)
	}
}

// outage walks the 503s: on a server whose rate-limit store fails (the
// closed policy's answer) and whose readiness check fails, every
// operation that declares 503 answers it.
func (w *walk) outage() {
	limits := api.Limits{Store: func(b ratelimit.Budget) ratelimit.Limiter { return failingLimiter{b} }}
	down := []api.Check{{Name: "database", Check: func(context.Context) error { return fmt.Errorf("connection refused") }}}
	w.l = exampleServer(w.t, api.Config{Limits: limits, Ready: down})
	ada, _ := loginAndKey(w.t, w.l.Auth)
	for _, o := range w.spec.operations() {
		if !o.declares("503") {
			continue
		}
		c := call{status: http.StatusServiceUnavailable, how: "the rate-limit store down", header: []string{"Cookie: " + ada}, body: o.someBody()}
		if o.public() {
			c.header = nil
		}
		w.do(o, c)
	}
}

// exampleServer serves cfg with the example on a database of its own.
func exampleServer(tb testing.TB, cfg api.Config) *live {
	db := apitest.OpenDB(tb)
	if cfg.Auth == nil {
		cfg.Auth = apitest.NewAuth(tb, db)
	}
	cfg.Features = []api.Feature{ingest.Feature(ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{}))}
	return apitest.Start(tb, cfg)
}

// failingLimiter is a rate-limit store that does not answer.
type failingLimiter struct{ b ratelimit.Budget }

func (f failingLimiter) Budget() ratelimit.Budget { return f.b }
func (f failingLimiter) Allow(context.Context, string) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, fmt.Errorf("connection refused")
}
func (f failingLimiter) Refund(context.Context, string, *ratelimit.Decision) error {
	return fmt.Errorf("connection refused")
}

// walkSpec is the served spec as generic JSON.
type walkSpec struct {
	paths              map[string]map[string]map[string]any
	responses, headers map[string]any
}

func servedWalkSpec(tb testing.TB, l *live) walkSpec {
	tb.Helper()
	var doc struct {
		Paths      map[string]map[string]map[string]any
		Components struct{ Responses, Headers map[string]any }
	}
	l.Call("GET", "/openapi.json", nil).Want(tb, http.StatusOK, "the spec").Decode(tb, &doc)
	return walkSpec{paths: doc.Paths, responses: doc.Components.Responses, headers: doc.Components.Headers}
}

// A walkOp is one operation of the spec.
type walkOp struct {
	id, method, path string
	op               map[string]any
}

// operations are every operation of the spec, sorted by path and method.
func (s walkSpec) operations() []walkOp {
	var ops []walkOp
	for path, item := range s.paths {
		for method, op := range item {
			ops = append(ops, walkOp{id: op["operationId"].(string), method: strings.ToUpper(method), path: path, op: op})
		}
	}
	slices.SortFunc(ops, func(a, b walkOp) int { return strings.Compare(a.path+" "+a.method, b.path+" "+b.method) })
	return ops
}

// operation is the operation of id.
func (s walkSpec) operation(tb testing.TB, id string) walkOp {
	for _, o := range s.operations() {
		if o.id == id {
			return o
		}
	}
	tb.Fatalf("the spec has no operation %s", id)
	return walkOp{}
}

// requiredHeaders are the headers the spec requires on o's status, each
// with the values its schema allows (nil: any), $refs followed.
func (s walkSpec) requiredHeaders(o walkOp, status string) map[string][]string {
	res, _ := o.responses()[status].(map[string]any)
	if ref, ok := res["$ref"].(string); ok {
		res, _ = s.responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	out := map[string][]string{}
	headers, _ := res["headers"].(map[string]any)
	for name, h := range headers {
		h := h.(map[string]any)
		if ref, ok := h["$ref"].(string); ok {
			h = s.headers[strings.TrimPrefix(ref, "#/components/headers/")].(map[string]any)
		}
		if required, _ := h["required"].(bool); !required {
			continue
		}
		var allowed []string
		schema, _ := h["schema"].(map[string]any)
		enum, _ := schema["enum"].([]any)
		for _, v := range enum {
			allowed = append(allowed, fmt.Sprint(v))
		}
		out[name] = allowed
	}
	return out
}

func (o walkOp) responses() map[string]any { return o.op["responses"].(map[string]any) }

func (o walkOp) declares(status string) bool { return o.responses()[status] != nil }

func (o walkOp) params() []map[string]any {
	var out []map[string]any
	ps, _ := o.op["parameters"].([]any)
	for _, p := range ps {
		out = append(out, p.(map[string]any))
	}
	return out
}

// public reports whether o needs no caller.
func (o walkOp) public() bool { sec, _ := o.op["security"].([]any); return len(sec) == 0 }

// sessionOnly reports whether o needs a session, not an API key.
func (o walkOp) sessionOnly() bool {
	sec, _ := o.op["security"].([]any)
	return len(sec) == 1 && sec[0].(map[string]any)["session"] != nil
}

// stream reports whether o's 200 is a stream.
func (o walkOp) stream() bool {
	ok, _ := o.responses()["200"].(map[string]any)
	content, _ := ok["content"].(map[string]any)
	return content["text/event-stream"] != nil
}

// hasBody reports whether o reads a JSON body.
func (o walkOp) hasBody() bool { return o.op["requestBody"] != nil }

// someBody is a JSON body for o, when it reads one: a valid one needs
// no more than the rate limits see.
func (o walkOp) someBody() string {
	if o.hasBody() {
		return "{}"
	}
	return ""
}

// ids are the ids a path parameter may be: the first its pattern takes
// fills it.
var ids = []string{"00000000-0000-4000-8000-000000000000", strings.Repeat("0", 32)}

// concretePath is o's path with each path parameter an id nobody has,
// and each required query parameter "walk".
func (o walkOp) concretePath() string {
	path, query := o.path, ""
	for _, p := range o.params() {
		schema, _ := p["schema"].(map[string]any)
		name := p["name"].(string)
		switch {
		case p["in"] == "path":
			pattern, _ := schema["pattern"].(string)
			id := ids[0]
			for _, c := range ids {
				if ok, _ := regexp.MatchString(pattern, c); ok {
					id = c
					break
				}
			}
			path = strings.ReplaceAll(path, "{"+name+"}", id)
		case p["in"] == "query" && p["required"] == true:
			query += "&" + name + "=walk"
		}
	}
	if query != "" {
		path += "?" + query[1:]
	}
	return path
}

// invalid are the requests to o that break its schema, one for each kind
// of thing it declares: a path parameter its pattern refuses, a number
// parameter sent empty, a required query parameter left out, a header
// its pattern refuses, a body missing its members.
func (o walkOp) invalid() []call {
	var out []call
	base := o.concretePath()
	for _, p := range o.params() {
		schema, _ := p["schema"].(map[string]any)
		name := p["name"].(string)
		switch {
		case p["in"] == "path":
			path := o.path
			for _, q := range o.params() {
				if q["in"] == "path" && q["name"] != name {
					path = strings.ReplaceAll(path, "{"+q["name"].(string)+"}", ids[0])
				}
			}
			out = append(out, call{how: "path." + name + " its pattern refuses", path: strings.ReplaceAll(path, "{"+name+"}", "x")})
		case p["in"] == "query" && schema["type"] != "string":
			out = append(out, call{how: "query." + name + " empty", path: base + sep(base) + name + "="})
		case p["in"] == "query" && p["required"] == true:
			out = append(out, call{how: "query." + name + " left out", path: strings.Replace(base, name+"=walk", "", 1)})
		case p["in"] == "header":
			out = append(out, call{how: name + " its pattern refuses", header: []string{name + ": nonsense"}})
		}
	}
	if o.hasBody() {
		out = append(out, call{how: "a body missing its members", body: "{}"})
	}
	for i := range out {
		out[i].status = http.StatusUnprocessableEntity
	}
	return out
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}
