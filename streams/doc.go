// Package streams serves Server-Sent Events: the stream plane (the caps on
// the streams a caller and a user hold open, the open budgets, the hub that
// carries events in memory or across replicas in Redis), one stream's
// runtime, and the front door by which a feature declares a stream
// operation ([Add]) and its users' events ([DeclareEvents], [Publish]).
//
// It is built on package api, which does not import it: a [Plane] serves
// an api.Server as one of its api.Config.Features ([Plane.Feature]).
package streams
