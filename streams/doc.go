// Package streams serves Server-Sent Events: the stream plane (the caps
// on the streams a caller and a user hold open, the open budgets, the hub
// that carries events, in memory or across replicas in Redis), one
// stream's runtime (its door before a byte of its response, the takeover
// of its connection, its deadlines and heartbeats, its typed events, the
// spec's schema of its messages), and the front door by which a feature
// declares a stream operation ([Add]) and the events of its users
// ([DeclareEvents], [Publish]).
//
// It is built on package api, which does not import it: a [Plane] serves
// an api.Server as one of its api.Config.Features ([Plane.Feature]).
package streams
