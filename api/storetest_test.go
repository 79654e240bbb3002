// The databases of api's tests hold the memory example's tables, for the
// tests that serve the example.
package api_test

import (
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store/storetest"
)

func init() { storetest.Use(ingest.Migrations) }
