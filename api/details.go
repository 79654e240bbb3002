package api

import (
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/validation"
)

// schemaLocation returns the longest prefix of loc that names only what op
// declares (body.items[3].text, query.limit): never a name the client made up.
func schemaLocation(op *huma.Operation, loc string) string {
	end := strings.IndexAny(loc, ".[")
	if end < 0 {
		end = len(loc)
	}
	switch part := loc[:end]; part {
	case "body":
		return bodyLocation(op, loc, end)
	case "path", "query", "header", "cookie":
		return paramLocation(op, part, loc[end:])
	}
	return ""
}

func paramLocation(op *huma.Operation, part, rest string) string {
	if op != nil {
		for _, p := range op.Parameters {
			if p.In == part && hasSegment(rest, "."+p.Name) {
				return part + "." + p.Name
			}
		}
	}
	return part
}

func bodyLocation(op *huma.Operation, loc string, end int) string {
	if op == nil || op.RequestBody == nil {
		return loc[:end]
	}
	reg := declarationOf(op).schemas
	var s *huma.Schema
	if mt := op.RequestBody.Content["application/json"]; mt != nil {
		s = mt.Schema
	}
	for s != nil && reg != nil {
		if s.Ref != "" {
			s = reg.SchemaFromRef(s.Ref)
			continue
		}
		step, next := bodyStep.FindString(loc[end:]), s.Items
		if step == "" {
			break
		}
		if step[0] == '.' {
			next = s.Properties[step[1:]]
		}
		if next == nil {
			break
		}
		end, s = end+len(step), next
	}
	return loc[:end]
}

// bodyStep matches the next step of a body location: ".name" or "[n]". A
// declared name holds no '.' or '[' (TestSpecPropertyNames), and those of
// the client's names are escaped (escapedNames).
var bodyStep = regexp.MustCompile(`^(\.[^.\[]*|\[[0-9]+\])`)

func hasSegment(rest, seg string) bool {
	if !strings.HasPrefix(rest, seg) {
		return false
	}
	rest = rest[len(seg):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// schemaMessage returns msg when it is one of huma's validation messages,
// cut before a quoted parser error, and "invalid value" otherwise.
func schemaMessage(templates []string, msg string) string {
	for _, t := range templates {
		if fixed, ok := strings.CutSuffix(t, ": %v"); ok && strings.HasPrefix(msg, fixed) {
			return fixed
		}
	}
	for _, t := range templates {
		first, last := strings.IndexByte(t, '%'), strings.LastIndexByte(t, '%')
		if first < 0 {
			if msg == t {
				return msg
			}
			continue
		}
		before, after := t[:first], t[last+2:] // around the verbs
		if len(msg) >= len(before)+len(after) && strings.HasPrefix(msg, before) && strings.HasSuffix(msg, after) {
			return msg
		}
	}
	return "invalid value"
}

// validationMessages lists the messages of huma's validator and parameter parser.
func validationMessages() []string {
	return []string{
		validation.MsgUnexpectedProperty,
		validation.MsgExpectedRFC3339DateTime,
		validation.MsgExpectedRFC1123DateTime,
		validation.MsgExpectedRFC3339Date,
		validation.MsgExpectedRFC3339Time,
		validation.MsgExpectedRFC5322Email,
		validation.MsgExpectedRFC5890Hostname,
		validation.MsgExpectedRFC2673IPv4,
		validation.MsgExpectedRFC2373IPv6,
		validation.MsgExpectedRFCIPAddr,
		validation.MsgExpectedRFC3986URI,
		validation.MsgExpectedRFC4122UUID,
		validation.MsgExpectedRFC6570URITemplate,
		validation.MsgExpectedRFC6901JSONPointer,
		validation.MsgExpectedRFC6901RelativeJSONPointer,
		validation.MsgExpectedRegexp,
		validation.MsgExpectedMatchAtLeastOneSchema,
		validation.MsgExpectedMatchExactlyOneSchema,
		validation.MsgExpectedNotMatchSchema,
		validation.MsgExpectedPropertyNameInObject,
		validation.MsgExpectedBoolean,
		validation.MsgExpectedDuration,
		validation.MsgExpectedNumber,
		validation.MsgExpectedInteger,
		validation.MsgExpectedString,
		validation.MsgExpectedBase64String,
		validation.MsgExpectedArray,
		validation.MsgExpectedObject,
		validation.MsgExpectedArrayItemsUnique,
		validation.MsgExpectedOneOf,
		validation.MsgExpectedMinimumNumber,
		validation.MsgExpectedExclusiveMinimumNumber,
		validation.MsgExpectedMaximumNumber,
		validation.MsgExpectedExclusiveMaximumNumber,
		validation.MsgExpectedNumberBeMultipleOf,
		validation.MsgExpectedMinLength,
		validation.MsgExpectedMaxLength,
		validation.MsgExpectedBePattern,
		validation.MsgExpectedMatchPattern,
		validation.MsgExpectedMinItems,
		validation.MsgExpectedMaxItems,
		validation.MsgExpectedMinProperties,
		validation.MsgExpectedMaxProperties,
		validation.MsgExpectedRequiredProperty,
		validation.MsgExpectedDependentRequiredProperty,
		"expected value to match exactly one schema but matched multiple",
		"write only property is non-zero",
		// huma's parameter parser
		"unknown query parameter",
		"required %s parameter is missing",
		"expected at most one value, but received multiple values",
		"invalid integer",
		"invalid float",
		"invalid boolean",
		"invalid date/time for format %s",
		"invalid url.URL value",
		"invalid value: %v",
	}
}
