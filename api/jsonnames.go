package api

import (
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// huma's validator tracks its place in a path buffer that steps back to
// the last '.' or '[' (huma v2.37.2, PathBuffer.Pop), so member names that
// hold them grow the path with every error: a 1 MiB body of names like ".1"
// took 13 s of CPU. Escaping those characters in the validated copy keeps
// the work linear and decides nothing differently: the escaping is
// injective, and no declared name holds '%', '.' or '['
// (TestSpecPropertyNames). The handler's input is decoded from the bytes.

// nameEscaper percent-encodes the characters that end a path segment, and
// '%' itself so that the encoding stays injective.
var nameEscaper = strings.NewReplacer("%", "%25", ".", "%2E", "[", "%5B")

// escapedNames returns formats whose Unmarshal escapes member names when
// it decodes into the generic copy (an *any) that huma validates.
func escapedNames(formats map[string]huma.Format) map[string]huma.Format {
	out := make(map[string]huma.Format, len(formats))
	for ct, f := range formats {
		unmarshal := f.Unmarshal
		f.Unmarshal = func(data []byte, v any) error {
			if err := unmarshal(data, v); err != nil {
				return err
			}
			if p, ok := v.(*any); ok {
				escapeNames(*p)
			}
			return nil
		}
		out[ct] = f
	}
	return out
}

// escapeNames escapes, in place, the member names of every object in v.
func escapeNames(v any) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			escapeNames(e)
		}
	case map[string]any:
		var renamed []string
		for k, e := range v {
			escapeNames(e)
			if strings.ContainsAny(k, "%.[") {
				renamed = append(renamed, k)
			}
		}
		// Take all of them out before putting any back: "a.b" becomes
		// "a%2Eb", which may be a name of the body, escaped in turn.
		values := make([]any, len(renamed))
		for i, k := range renamed {
			values[i] = v[k]
			delete(v, k)
		}
		for i, k := range renamed {
			v[nameEscaper.Replace(k)] = values[i]
		}
	}
}
