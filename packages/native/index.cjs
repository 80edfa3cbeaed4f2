'use strict';
// The compiled addon; requiring this throws when it was not built (see build-or-skip.cjs), and
// @npyts/core/node then keeps to JavaScript.
module.exports = require('./build/Release/npyts_native.node');
