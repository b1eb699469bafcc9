// Package e2e is kproxy's end-to-end suite: a real Apache Kafka broker
// (broker.sh), real clients in Java, Python, Node and Go, and kproxy between
// them. Its tests carry the build tag e2e and are run by run.sh, which
// installs and starts everything first:
//
//	e2e/run.sh               # every scenario
//	e2e/run.sh 1 8           # scenarios 1 and 8
//
// Each TestScenarioN runs kproxy with a journal, drives clients seeded only
// with kproxy's address, stops kproxy, and asserts the JSON timeline that
// `kproxy replay DIR --format json` tells from the journal.
package e2e
