//go:build !race

package main

// raceEnabled: the tests, and brain run from them, have the race
// detector, which multiplies memory and time.
const raceEnabled = false
