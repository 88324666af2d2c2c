#include "sqlite3ext.h"

