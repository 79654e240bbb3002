// This file declares the API-key events, which a user's GET
// /api/v1/events carries.
package account

import "github.com/brain-template/brain/streams"

// The API-key events. A handler publishes one (publish); [Feature]
// declares them.
var (
	apiKeyCreated = streams.EventType{Name: "apikey.created", Data: APIKeyView{}, Doc: "You created an API key (its secret is never sent again)."}
	apiKeyDeleted = streams.EventType{Name: "apikey.deleted", Data: DeletedEvent{}, Doc: "You deleted an API key."}
)

// DeletedEvent names what was deleted.
type DeletedEvent struct {
	ID string `json:"id" doc:"The id of what was deleted."`
}
