package streams

import (
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/internal/product"
)

// addPlatform declares GET /api/v1/events and GET /api/v1/system/live.
func (p *Runtime) addPlatform() {
	tags := api.Tag(p.s.API, tag, tagDoc)
	d := p.reg
	d.events = p.add(Operation{
		Operation: huma.Operation{
			OperationID: "follow-events", Path: api.Prefix + "/events", Tags: tags,
			Summary: "Follow your events",
			Description: "Your events as they happen, each with an id. On reconnect, send the last id received as Last-Event-ID (browsers do): " +
				"the events after it that are still kept come first, or stream.gap says some are lost. " +
				"Every stream endpoint shares the stream plane (x-rate-limit, plane stream): the open streams of your session or API key (streams), " +
				"those of your user, counting all of its sessions and API keys (streams-per-user), the streams your session or API key may open (stream-opens), and those your user may open (stream-opens-per-user); " +
				"past any of them a stream is refused with 429 before it starts.",
		},
		Events: append(slices.Clone(d.userEvents), gapEvent),
		Serve:  p.serveEvents,
	})
	who := "Any caller (a session or an API key) may follow it: it shows the server's load, not any user's data (" + product.EnvPrefix + "LIVE_ACCESS=admin restricts it to the user admin)."
	if p.cfg.LiveAccess == api.Admin {
		who = "Only the user admin may follow it (" + product.EnvPrefix + "LIVE_ACCESS=admin); any other caller gets 403."
	}
	p.add(Operation{
		Operation: huma.Operation{
			OperationID: "follow-system-live", Path: api.Prefix + "/system/live", Tags: tags,
			Summary: "Follow the server's state",
			Description: "A snapshot of this replica every second: requests and refusals per second, open streams, the gauges the features declare, goroutines, heap. " +
				"It keeps the last five minutes (300, taken whether or not a stream is open): a new stream gets them first, oldest first, each with its own at. " + who +
				" Shares the stream plane's caps and open budgets with every stream endpoint.",
		},
		Access: p.cfg.LiveAccess,
		Events: []EventType{liveEvent},
		Serve:  p.serveLive,
	})
	declareGauges(p.s.API.OpenAPI().Components.Schemas, d.gauges)
}

func (p *Runtime) serveEvents(st *Stream) {
	sub, ok := st.Subscribe()
	if !ok {
		return
	}
	defer sub.Close()
	if st.Start() != nil {
		return
	}
	if sub.Gap && st.sendGap("") != nil {
		return
	}
	for i := range sub.Replay {
		if st.SendEvent(&sub.Replay[i]) != nil {
			return
		}
	}
	Pump(st, sub.Events(), func(ev *Event, ok bool) error {
		if !ok { // the hub dropped this stream: it fell behind
			st.CloseSlow()
			return ErrEnded
		}
		return st.SendEvent(ev)
	})
}
