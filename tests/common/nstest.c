#include "nstest.h"
