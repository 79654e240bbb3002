package web

import "github.com/brain-template/brain/api"

// notBuiltPage is what / answers without the dashboard: how to build it.
const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Dashboard not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;color:#1d2330}code{background:#f0f2f6;padding:1px 4px;border-radius:3px}</style>
</head><body>
<h1>The dashboard is not built</h1>
<p>This server was built without the dashboard: <code>web/dist</code> had no <code>index.html</code>.
Build it with <code>make web</code>, then start the server again (<code>go run ./cmd/brain</code> embeds it);
or run <code>make run</code>, which does both. Building needs Node.js 20 and npm.</p>
<p>The API works meanwhile: its reference is at <a href="/docs">/docs</a>, its spec at
<a href="/openapi.json">/openapi.json</a>, and <a href="/api/v1/health">/api/v1/health</a> answers while the server runs.</p>
</body></html>
`

var notBuilt = &file{body: []byte(notBuiltPage), etag: api.ETag([]byte(notBuiltPage), ""),
	contentType: "text/html; charset=utf-8", cache: cacheRevalidate}
