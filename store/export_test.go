package store

// QuickStart is o with River's random delay before each maintenance task
// turned off, so that a test's Queue rescues stuck jobs as soon as it
// leads, not up to seconds later.
func QuickStart(o QueueOptions) QueueOptions {
	o.testOnly = true
	return o
}

// QuietOutages is the handler River logs through, with a clock.
var QuietOutages = quietOutages

// PlatformMigrations is how many migrations the platform's set has (a
// fork adds its own to it).
func PlatformMigrations(d Dialect) int {
	s, err := platform.load(d)
	if err != nil {
		panic(err)
	}
	return len(s.ms)
}
