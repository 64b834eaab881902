// The parsers are inline (parse_inline.hpp, included by parse.hpp) so the pipeline keeps
// their results in registers. This unit keeps the parse library (and its users that take a
// function's address) linkable; it has nothing of its own.
#include "dataplane/core/parse.hpp"
