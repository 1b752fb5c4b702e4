// What a thread keeps of the actor systems it used. A thread that used a system (a scoped
// actor, a blocking request) holds on to that system's logger until it uses another one, and the
// system's destructor waits until every such thread let go: a thread that serves calls on many
// systems in turn (an HTTP thread, a Python caller) lets go after each call, or a destructor
// on another thread may wait for it forever.
#pragma once

namespace darcy::runtime {

/// Lets go of the last actor system this thread used; calls on any system work as before.
void let_go_of_actor_systems();

} // namespace darcy::runtime
