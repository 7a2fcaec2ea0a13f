// Imported for its effect. A SIGTERM (how node's test runner ends a file that ran past
// --test-timeout) ends a process without its 'exit' event, so the hooks that kill the
// node and PostgreSQL processes a test started would not run and those would outlive it,
// holding ports and CPU for the files still to run. Exiting on the signal runs them; a
// process that handles SIGTERM itself (a support script run alone) is left to do so.
process.on('SIGTERM', () => {
  if (process.listenerCount('SIGTERM') === 1) process.exit(143);
});
