"""SQL for driving a live session (issue 30): the inputs people send it, kept in a
package of their own so that repositories/ stays within fifteen modules."""
