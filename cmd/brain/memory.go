// This file wires in the memory example (package ingest, docs/memory.md):
// delete it with ingest/ to remove the example (docs/fork.md).
package main

import "github.com/brain-template/brain/ingest"

func init() { wire(func() module { return ingest.NewModule() }) }
