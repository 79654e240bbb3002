package api

import (
	"bytes"
	"encoding/json"
	"html/template"
	"sort"
	"strings"
)

// docsPage is the reference page at /docs, rendered from /openapi.json with
// no script and nothing from another host.
type docsPage struct {
	Title, Version, Description string
	Groups                      []docsGroup
	Schemas                     []docsJSON
}

type docsGroup struct {
	Tag        string
	Operations []docsOperation
}

type docsOperation struct {
	ID, Method, Path, Summary, Description string
	Parameters                             []docsParam
	RequestBody                            string
	Responses                              []docsResponse
	Extensions                             []docsJSON
}

type docsParam struct {
	Name, In, Schema, Description string
	Required                      bool
}

type docsResponse struct {
	Status, Description, Schema string
	Headers                     []string
}

type docsJSON struct{ Name, JSON string }

// oasDoc is the subset of OpenAPI that the page shows.
type oasDoc struct {
	Info struct {
		Title, Version, Description string
	}
	Paths      map[string]map[string]oasOperation
	Components struct {
		Schemas map[string]json.RawMessage
	}
}

type oasOperation struct {
	OperationID string `json:"operationId"`
	Summary     string
	Description string
	Tags        []string
	Parameters  []struct {
		Name, In, Description string
		Required              bool
		Schema                json.RawMessage
	}
	RequestBody *struct {
		Content map[string]struct{ Schema json.RawMessage }
	} `json:"requestBody"`
	Responses map[string]struct {
		Ref         string `json:"$ref"`
		Description string
		Headers     map[string]json.RawMessage
		Content     map[string]struct{ Schema json.RawMessage }
	}
}

var methodOrder = map[string]int{"get": 0, "post": 1, "put": 2, "patch": 3, "delete": 4, "head": 5, "options": 6, "trace": 7}

// buildDocsPage decodes the spec and arranges it for the page: operations
// by first tag, path and method, then the schemas.
func buildDocsPage(spec []byte) (*docsPage, error) {
	var doc oasDoc
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, err
	}
	var raw struct { // the operations' members, for their x- extensions
		Paths map[string]map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(spec, &raw); err != nil {
		return nil, err
	}
	page := &docsPage{Title: doc.Info.Title, Version: doc.Info.Version, Description: doc.Info.Description}
	groups := map[string]*docsGroup{}
	for path, item := range doc.Paths {
		for method, op := range item {
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			if groups[tag] == nil {
				groups[tag] = &docsGroup{Tag: tag}
			}
			groups[tag].Operations = append(groups[tag].Operations, docsOperationOf(path, method, op, raw.Paths[path][method]))
		}
	}
	for _, g := range groups {
		sort.Slice(g.Operations, func(i, j int) bool {
			a, b := g.Operations[i], g.Operations[j]
			if a.Path != b.Path {
				return a.Path < b.Path
			}
			return methodOrder[strings.ToLower(a.Method)] < methodOrder[strings.ToLower(b.Method)]
		})
		page.Groups = append(page.Groups, *g)
	}
	sort.Slice(page.Groups, func(i, j int) bool { return page.Groups[i].Tag < page.Groups[j].Tag })
	for name, raw := range doc.Components.Schemas {
		page.Schemas = append(page.Schemas, docsJSON{Name: name, JSON: formatJSON(raw, true)})
	}
	sort.Slice(page.Schemas, func(i, j int) bool { return page.Schemas[i].Name < page.Schemas[j].Name })
	return page, nil
}

// docsOperationOf is one operation as the page shows it.
func docsOperationOf(path, method string, op oasOperation, members map[string]json.RawMessage) docsOperation {
	d := docsOperation{ID: op.OperationID, Method: strings.ToUpper(method), Path: path, Summary: op.Summary, Description: op.Description}
	for _, p := range op.Parameters {
		d.Parameters = append(d.Parameters, docsParam{Name: p.Name, In: p.In, Required: p.Required, Description: p.Description, Schema: formatJSON(p.Schema, false)})
	}
	if op.RequestBody != nil {
		for ct, c := range op.RequestBody.Content {
			d.RequestBody = ct + " " + formatJSON(c.Schema, false)
		}
	}
	for status, r := range op.Responses {
		dr := docsResponse{Status: status, Description: r.Description, Schema: r.Ref}
		for ct, c := range r.Content {
			dr.Schema = ct + " " + formatJSON(c.Schema, false)
		}
		for h := range r.Headers {
			dr.Headers = append(dr.Headers, h)
		}
		sort.Strings(dr.Headers)
		d.Responses = append(d.Responses, dr)
	}
	sort.Slice(d.Responses, func(i, j int) bool { return d.Responses[i].Status < d.Responses[j].Status })
	for k, v := range members {
		if strings.HasPrefix(k, "x-") {
			d.Extensions = append(d.Extensions, docsJSON{Name: k, JSON: formatJSON(v, true)})
		}
	}
	sort.Slice(d.Extensions, func(i, j int) bool { return d.Extensions[i].Name < d.Extensions[j].Name })
	return d
}

// formatJSON is raw indented, or compact.
func formatJSON(raw json.RawMessage, indent bool) string {
	var b bytes.Buffer
	f := json.Compact
	if indent {
		f = func(b *bytes.Buffer, raw []byte) error { return json.Indent(b, raw, "", "  ") }
	}
	if f(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// schemaLink turns a "#/components/schemas/X" reference inside rendered
// JSON into an anchor on this page.
func schemaLink(s string) template.HTML {
	esc := template.HTMLEscapeString(s)
	const prefix = "&#34;#/components/schemas/"
	var out strings.Builder
	for {
		i := strings.Index(esc, prefix)
		if i < 0 {
			out.WriteString(esc)
			break
		}
		out.WriteString(esc[:i])
		rest := esc[i+len(prefix):]
		end := strings.Index(rest, "&#34;")
		if end < 0 {
			out.WriteString(esc[i:])
			break
		}
		name := rest[:end]
		out.WriteString(`<a href="#schema-` + name + `">&#34;#/components/schemas/` + name + `&#34;</a>`)
		esc = rest[end+len("&#34;"):]
	}
	return template.HTML(out.String())
}

var docsTemplate = template.Must(template.New("docs").Funcs(template.FuncMap{"schemaLink": schemaLink, "lower": strings.ToLower}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} API reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#1d2330}
nav{width:18rem;flex:none;height:100vh;position:sticky;top:0;overflow:auto;background:#f4f6fa;padding:1rem;box-sizing:border-box;border-right:1px solid #dde2ea}
nav a{display:block;color:#1d2330;text-decoration:none;font-size:13px;padding:2px 0}
main{padding:1.5rem 2.5rem;max-width:60rem;min-width:0}
h2{border-bottom:1px solid #dde2ea;padding-bottom:.3rem;margin-top:2.5rem}
section.op{border:1px solid #dde2ea;border-radius:6px;padding:.2rem 1rem 1rem;margin:1.2rem 0}
.m{font:600 12px monospace;padding:2px 6px;border-radius:4px;color:#fff;background:#5a6478}
.get{background:#2f7d4f}.post{background:#2b5fb4}.put,.patch{background:#a86b12}.delete{background:#b42b2b}
code,pre{font:13px/1.4 ui-monospace,monospace}pre{background:#f4f6fa;padding:.6rem;overflow:auto;border-radius:4px}
table{border-collapse:collapse;width:100%;font-size:14px}td,th{border-bottom:1px solid #e6e9ef;text-align:left;padding:4px 6px;vertical-align:top}
td code{word-break:break-all}
</style></head><body>
<nav><strong>{{.Title}} {{.Version}}</strong><p><a href="/openapi.json">openapi.json</a><a href="/openapi.yaml">openapi.yaml</a></p>
{{range .Groups}}<p><strong>{{.Tag}}</strong>{{range .Operations}}<a href="#op-{{.ID}}"><span class="m {{lower .Method}}">{{.Method}}</span> {{.Path}}</a>{{end}}</p>{{end}}
<p><strong>Schemas</strong>{{range .Schemas}}<a href="#schema-{{.Name}}">{{.Name}}</a>{{end}}</p></nav>
<main><h1>{{.Title}} API reference <small>v{{.Version}}</small></h1><p style="white-space:pre-line">{{.Description}}</p>
{{range .Groups}}<h2>{{.Tag}}</h2>{{range .Operations}}
<section class="op" id="op-{{.ID}}"><h3><span class="m {{lower .Method}}">{{.Method}}</span> <code>{{.Path}}</code> — {{.Summary}}</h3>
<p><small>operationId <code>{{.ID}}</code></small></p>{{if .Description}}<p style="white-space:pre-line">{{.Description}}</p>{{end}}
{{if .Parameters}}<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>schema</th><th>description</th></tr>
{{range .Parameters}}<tr><td><code>{{.Name}}</code>{{if .Required}} *{{end}}</td><td>{{.In}}</td><td><code>{{.Schema}}</code></td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{if .RequestBody}}<h4>Request body</h4><pre>{{schemaLink .RequestBody}}</pre>{{end}}
<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th><th>headers</th></tr>
{{range .Responses}}<tr><td><code>{{.Status}}</code></td><td>{{.Description}}</td><td><code>{{schemaLink .Schema}}</code></td><td>{{range .Headers}}<code>{{.}}</code> {{end}}</td></tr>{{end}}</table>
{{range .Extensions}}<h4><code>{{.Name}}</code></h4><pre>{{.JSON}}</pre>{{end}}
</section>{{end}}{{end}}
<h2>Schemas</h2>{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3><pre>{{schemaLink .JSON}}</pre>{{end}}
</main></body></html>
`))

// renderDocs renders the reference page of spec, the served openapi.json.
func renderDocs(spec []byte) ([]byte, error) {
	page, err := buildDocsPage(spec)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := docsTemplate.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
