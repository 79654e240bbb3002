package apicheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/brain-template/brain/ratelimit"
	"github.com/getkin/kin-openapi/openapi3"
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

// rateLimitBreaking reports, for each operation in both documents, a lost 429
// response or rate-limit header, and an x-rate-limit removed or tightened.
func rateLimitBreaking(base, rev *openapi3.T) []Finding {
	var out []Finding
	for path, bItem := range base.Paths.Map() {
		rItem := rev.Paths.Value(path)
		if rItem == nil {
			continue // a removed operation is oasdiff's finding
		}
		for method, bOp := range bItem.Operations() {
			rOp := rItem.GetOperation(method)
			if rOp == nil {
				continue
			}
			add := func(id, format string, args ...any) {
				out = append(out, Finding{ID: id, Method: method, Path: path, Text: fmt.Sprintf(format, args...)})
			}
			checkResponses(bOp.Responses, rOp.Responses, add)
			checkPolicies(bOp.Extensions["x-rate-limit"], rOp.Extensions["x-rate-limit"], add)
		}
	}
	return out
}

// checkResponses reports a lost 429 response and a lost rate-limit header; the
// loader has followed the $refs.
func checkResponses(bResps, rResps *openapi3.Responses, add func(id, format string, args ...any)) {
	if bResps.Value("429") != nil && rResps.Value("429") == nil {
		add(IDRateLimitResponseRemoved, "removed the 429 response")
	}
	for status, bResp := range bResps.Map() {
		rResp := rResps.Value(status)
		if rResp == nil || rResp.Value == nil || bResp.Value == nil {
			continue
		}
		for _, h := range rateLimitHeaders {
			if hasKeyFold(bResp.Value.Headers, h) && !hasKeyFold(rResp.Value.Headers, h) {
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

func hasKeyFold(headers openapi3.Headers, key string) bool {
	for k := range headers {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}
