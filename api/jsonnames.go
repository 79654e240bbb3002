package api

import (
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// nameEscaper percent-encodes '%', '.' and '[' in member names: huma's
// validator path grows with each error on such names (quadratic work), and
// no declared name holds them (TestSpecPropertyNames).
var nameEscaper = strings.NewReplacer("%", "%25", ".", "%2E", "[", "%5B")

// escapedNames returns formats whose Unmarshal escapes member names in the
// generic copy (an *any) that huma validates.
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
		// all out before any back: "a%2Eb" may be a name of the body too
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
