/* The compiled engine's one call into CPython's cycle collector.
 *
 * A graph of Values is a DAG: a node refers only to its operands, never back, so reference
 * counting frees every node and the cycle collector can never find garbage among them.  Yet
 * mypyc's classes are collector-tracked, and a training loop that builds a graph of ~1e5
 * nodes a step paid several full collections a step, each walking every live node: the
 * 6-step moons loop took 0.41-0.55 s with the collector on and 0.06-0.08 s with it off.
 * ``untrack`` takes a node the engine made out of the collector's lists (nodes of user
 * subclasses, which may hold anything, stay tracked: the engine only untracks what it made).
 * Deallocation is unchanged: mypyc's dealloc untracks again (a no-op) and uses the trashcan,
 * so a chain of a million nodes is still freed without recursion.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
untrack(PyObject *module, PyObject *node)
{
    (void)module;
    if (PyObject_IS_GC(node)) {
        PyObject_GC_UnTrack(node);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"untrack", untrack, METH_O, "Take an engine-made node out of the cycle collector's lists."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_collector", "The compiled engine's nodes, out of the cycle collector.", -1, methods,
};

PyMODINIT_FUNC
PyInit__collector(void)
{
    return PyModule_Create(&module);
}
