package apicheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/brain-template/brain/ratelimit"
)

// The ids of the rate-limit findings.
const (
	IDRateLimitResponseRemoved = "rate-limit-response-removed" // an operation lost its 429 response
	IDRateLimitHeaderRemoved   = "rate-limit-header-removed"   // a response lost a rate-limit header
	IDRateLimitRemoved         = "rate-limit-removed"          // an operation lost its x-rate-limit
	IDRateLimitBudgetAdded     = "rate-limit-budget-added"     // a new budget now applies
	IDRateLimitTightened       = "rate-limit-tightened"        // a budget admits less than before
)

// rateLimitHeaders are the headers clients read to pace themselves.
var rateLimitHeaders = append([]string{ratelimit.HeaderRetryAfter}, ratelimit.HeaderNames...)

// tighter says which way each numeric member of a budget tightens it;
// backoff_s, a [min, max] pair, tightens when longer.
var tighter = []struct{ key, verb string }{{"limit", "lowered"}, {"burst", "lowered"},
	{"concurrent", "lowered"}, {"failures", "lowered"}, {"ip_failures", "lowered"}, {"window_s", "raised"}}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// rateLimitBreaking reports, for each operation in both documents, a lost 429
// response or rate-limit header, and an x-rate-limit removed or tightened.
func rateLimitBreaking(base, rev []byte) ([]Finding, error) {
	var b, r jsonDoc
	if err := json.Unmarshal(base, &b.root); err != nil {
		return nil, fmt.Errorf("apicheck: base: %w", err)
	}
	if err := json.Unmarshal(rev, &r.root); err != nil {
		return nil, fmt.Errorf("apicheck: revision: %w", err)
	}
	var out []Finding
	bPaths, _ := b.root["paths"].(map[string]any)
	rPaths, _ := r.root["paths"].(map[string]any)
	for path, bItem := range bPaths {
		rItem, _ := rPaths[path].(map[string]any)
		for _, m := range methods {
			bOp, ok := bItem.(map[string]any)[m].(map[string]any)
			if !ok {
				continue
			}
			rOp, ok := rItem[m].(map[string]any)
			if !ok {
				continue // a removed operation is oasdiff's finding
			}
			add := func(id, format string, args ...any) {
				out = append(out, Finding{ID: id, Method: strings.ToUpper(m), Path: path, Text: fmt.Sprintf(format, args...)})
			}
			checkResponses(&b, &r, bOp, rOp, add)
			checkPolicies(bOp["x-rate-limit"], rOp["x-rate-limit"], add)
		}
	}
	return out, nil
}

func checkResponses(b, r *jsonDoc, bOp, rOp map[string]any, add func(id, format string, args ...any)) {
	bResps, _ := bOp["responses"].(map[string]any)
	rResps, _ := rOp["responses"].(map[string]any)
	if bResps["429"] != nil && rResps["429"] == nil {
		add(IDRateLimitResponseRemoved, "removed the 429 response")
	}
	for status, bResp := range bResps {
		rResp := r.resolve(rResps[status])
		if rResp == nil {
			continue
		}
		bHeaders, _ := b.resolve(bResp)["headers"].(map[string]any)
		rHeaders, _ := rResp["headers"].(map[string]any)
		for _, h := range rateLimitHeaders {
			if hasKeyFold(bHeaders, h) && !hasKeyFold(rHeaders, h) {
				add(IDRateLimitHeaderRemoved, "removed the %s header from the %s response", h, status)
			}
		}
	}
}

func checkPolicies(bRL, rRL any, add func(id, format string, args ...any)) {
	if bRL == nil {
		bRL = []any{}
		if rRL == nil {
			return
		}
	}
	if list, ok := rRL.([]any); !ok || (len(list) == 0 && len(bRL.([]any)) > 0) {
		add(IDRateLimitRemoved, "removed its x-rate-limit declaration (or left it empty or not a list)")
		return
	}
	bEntries, rEntries := budgetsByName(bRL), budgetsByName(rRL)
	for _, name := range slices.Sorted(maps.Keys(rEntries)) {
		be, ok := bEntries[name]
		if !ok {
			add(IDRateLimitBudgetAdded, "added the budget %s", name)
			continue
		}
		compareBudget(name, be, rEntries[name], add)
	}
}

// compareBudget reports each way budget name is tighter in re than in be.
func compareBudget(name string, be, re map[string]any, add func(id, format string, args ...any)) {
	for _, t := range tighter {
		bv, rv, ok := numbers(be[t.key], re[t.key])
		if ok && (t.verb == "lowered" && rv < bv || t.verb == "raised" && rv > bv) {
			add(IDRateLimitTightened, "%s %s of budget %s from %v to %v", t.verb, t.key, name, bv, rv)
		}
	}
	bb, _ := be["backoff_s"].([]any)
	rb, _ := re["backoff_s"].([]any)
	for i := 0; i < len(bb) && i < len(rb); i++ {
		if bv, rv, ok := numbers(bb[i], rb[i]); ok && rv > bv {
			add(IDRateLimitTightened, "raised backoff_s[%d] of budget %s from %v to %v", i, name, bv, rv)
		}
	}
}

// budgetsByName indexes an x-rate-limit list by "plane/policy".
func budgetsByName(v any) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _ := v.([]any)
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if _, has := m["burst"]; !has && m["limit"] != nil {
			m["burst"] = m["limit"] // a budget's burst defaults to its limit
		}
		out[fmt.Sprint(m["plane"], "/", m["policy"])] = m
	}
	return out
}

func numbers(a, b any) (float64, float64, bool) {
	x, ok1 := a.(float64)
	y, ok2 := b.(float64)
	return x, y, ok1 && ok2
}

func hasKeyFold(m map[string]any, key string) bool {
	for k := range m {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// jsonDoc is an OpenAPI document decoded into maps, to follow local $refs.
type jsonDoc struct{ root map[string]any }

// resolve follows v's $ref chain (a few hops at most) to an object, or nil.
func (d *jsonDoc) resolve(v any) map[string]any {
	for range 8 {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		v = d.pointer(ref)
	}
	return nil
}

func (d *jsonDoc) pointer(ref string) any {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = d.root
	for _, part := range strings.Split(p, "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}
