package main

import "github.com/brain-template/brain/ingest"

// The memory example (docs/memory.md): delete this file with ingest/ to remove it.
func init() { wire(func() module { return ingest.NewModule() }) }
