// Note [Tokens reload]: what a SIGHUP that reloaded the tokens file does to
// the daemon's sessions. A user removed from the file must not keep working
// through the sessions it opened, nor keep memory in detached ones until
// their grace period ends: both end now, with a message that says why.
// Users are matched by name, so a user whose token changed keeps its
// sessions. Quotas are set on the users' allocator accounts and apply from
// the next allocation; admin rights are checked per Admin call, so they
// apply as soon as the Authenticator swapped its table.
#ifndef TENSORD_SERVER_TOKENS_RELOAD_H_
#define TENSORD_SERVER_TOKENS_RELOAD_H_

#include "server/session_manager.h"

namespace tensord {

// After `sessions->auth()` reloaded its tokens file: ends the sessions,
// open or detached, of users no longer in it and sets every user's quota
// on its allocator account anew. Called from main's signal loop.
void ApplyTokens(SessionManager* sessions);

}  // namespace tensord

#endif  // TENSORD_SERVER_TOKENS_RELOAD_H_
