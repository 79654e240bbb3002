// The databases of ingest's tests hold the example's tables.

package ingest_test

import (
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/store/storetest"
)

func init() { storetest.Use(ingest.Migrations) }
