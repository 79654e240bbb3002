package main

import (
	"sync"

	"github.com/brain-template/brain/web"
)

// dashboard is the build the binary embeds (package web), read once: the
// dashboard at / and, when built, the docs UI at /docs.
var dashboard = sync.OnceValues(func() (*web.Site, error) { return web.New(web.Dist()) })
