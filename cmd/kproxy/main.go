// Command kproxy is a Kafka wire-protocol proxy that tells the story of
// every consumer-group rebalance it sees. See README.md.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// commands lists kproxy's subcommands, one constructor per line. To add a
// command, write it in its own file and add ONE line here.
var commands = []func() *cobra.Command{
	newServeCmd,       // serve.go: run the proxy
	newCoordinatorCmd, // coordinator.go: which broker coordinates a group
	newDemoCmd,        // demo.go: the seed scenario on an embedded cluster
	newJournalCmd,     // journal.go: look inside journals (inspect)
	newReplayCmd,      // replay.go: tell the story again from journals
	newDiagnoseCmd,    // diagnose.go: causes and advice from journals
	newCaptureCmd,     // capture.go: the story of a packet capture, live
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "kproxy",
		Short: "A Kafka proxy that tells the story of every consumer-group rebalance",
		// Errors are printed once, by main; usage only for usage errors.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

func main() {
	if err := newRootCmd().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "kproxy:", err)
		os.Exit(1)
	}
}
