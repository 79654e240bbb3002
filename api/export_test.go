package api

import (
	"github.com/danielgtaylor/huma/v2"
)

// Renders reports how many times s has rendered the spec or the reference
// page.
func Renders(s *Server) int { return int(s.renders.Load()) }

// BodyLimit is the largest body op accepts, as it declared it; 0 when it
// reads none.
func BodyLimit(op *huma.Operation) int64 { return declarationOf(op).bodyLimit }

// DeclarationOf returns what op declares.
func DeclarationOf(op *huma.Operation) Declaration { return *declarationOf(op) }

// StatusFor returns the status of err's kind in faultAnswers, or 0.
func StatusFor(err error) int {
	if i := faultAnswer(err); i >= 0 {
		return faultAnswers[i].status
	}
	return 0
}

// StatusCodes maps each status the API names to its envelope code.
func StatusCodes() map[int]string { return codes }

// SchemaName names the component schema of a type as the server does.
var SchemaName = schemaName
